import type { Logger } from '../logger.ts'
import type { RequestRecord } from './request-observation.ts'

// One line per request. The caller is named by its subject; the token itself is never logged.
export function logRequest(logger: Logger, record: RequestRecord): void {
  const fields = { ...record, durationMs: Math.round(record.durationMs * 100) / 100 }
  if (record.status >= 500) logger.warn(fields, 'request failed')
  else logger.info(fields, 'request')
}
