import type { Logger } from '../shared/logger.ts'
import type { RequestRecord } from './request-observation.ts'

// One line per request. The caller's subject only when the operator asks for it (`withSubject`):
// an owner's erasure does not reach the logs. The token itself is never logged.
export function logRequest(logger: Logger, { subject, ...record }: RequestRecord, withSubject = false): void {
  const durationMs = Math.round(record.durationMs * 100) / 100
  const fields = withSubject ? { ...record, durationMs, subject } : { ...record, durationMs }
  if (record.status >= 500) logger.warn(fields, 'request failed')
  else logger.info(fields, 'request')
}
