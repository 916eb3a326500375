import type { Logger } from '../shared/logger.ts'
import type { RequestRecord } from './request-observation.ts'

// One line per request. The caller's subject only when the operator asks for it (`withSubject`):
// an owner's erasure does not reach the logs. The token itself is never logged. The fields are
// one object literal of a fixed shape, handed to pino as they are (no copy of the record).
export function logRequest(logger: Logger, record: RequestRecord, withSubject = false): void {
  const { requestId, method, route, path, status } = record
  const durationMs = Math.round(record.durationMs * 100) / 100
  const fields = withSubject
    ? { requestId, method, route, path, status, durationMs, subject: record.subject }
    : { requestId, method, route, path, status, durationMs }
  if (status >= 500) logger.warn(fields, 'request failed')
  else logger.info(fields, 'request')
}
