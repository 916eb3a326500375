import type { Executor } from '../store/database.ts'
import { type ExportedText, readSettledText } from '../store/event-log.ts'
import { settleNow } from '../store/settled-log.ts'

export type ExportOptions = { afterPosition?: bigint; batchSize?: number }

// Writes the settled log after `afterPosition` as NDJSON, one event per line, in position order:
// it first waits for the transactions that may still commit a position at or below the last one
// handed out (settled-log.ts), then writes every event up to that horizon and none above it. So
// the next export, after this one's last position, misses nothing that commits meanwhile. Values
// are copied as PostgreSQL prints them, so nothing is rounded or re-encoded on the way. The
// transaction id is left out: it means nothing to another database.
export async function exportEvents(
  db: Executor,
  write: (chunk: string) => Promise<void>,
  { afterPosition = 0n, batchSize = 10_000 }: ExportOptions = {},
): Promise<number> {
  const horizon = await settleNow(db)
  let after = afterPosition
  let exported = 0
  for (;;) {
    const { lines } = await readSettledText(db, after, horizon, [], batchSize)
    const last = lines.at(-1)
    if (!last) return exported
    await write(lines.map(toLine).join(''))
    exported += lines.length
    after = BigInt(last[0])
  }
}

function toLine([
  position,
  streamId,
  streamVersion,
  type,
  schemaVersion,
  data,
  metadata,
  recordedAt,
]: ExportedText): string {
  return (
    `{"position":"${position}","streamId":${JSON.stringify(streamId)},` +
    `"streamVersion":${streamVersion},"type":${JSON.stringify(type)},` +
    `"schemaVersion":${schemaVersion},"data":${data},"metadata":${metadata},` +
    `"recordedAt":"${recordedAt}"}\n`
  )
}
