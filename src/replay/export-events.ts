import { settleNow } from '../event-log/horizon.ts'
import { type ExportedText, readSettledText } from '../event-log/reading.ts'
import type { Database, Executor } from '../store/database.ts'
import { erasedLine, HEADER_LINE, keyLine } from './export-format.ts'
import { readErasedPseudonyms, readLiveKeys } from './exported-keys.ts'

export type ExportOptions = { afterPosition?: bigint; batchSize?: number }

export type Exported = { events: number; keys: number; erased: number }

// Writes an export (replay/export-format.ts): the header, the owners' keys and the erased
// pseudonyms, then the settled log after `afterPosition`, one event per line, in position order.
// It first waits for the transactions that may still commit a position at or below the last one
// handed out (log/horizon.ts), then reads everything in one snapshot (REPEATABLE READ): every event
// up to that horizon and none above it, and the keys as they stood then, an owner whose erasure
// has begun among the erased. So the next export, after this one's last position, misses nothing
// that commits meanwhile, and no export taken after an erasure holds the owner's key. Values are
// copied as PostgreSQL prints them, so nothing is rounded or re-encoded on the way. The transaction
// id is left out: it means nothing to another database.
export async function exportEvents(
  db: Database,
  write: (chunk: string) => Promise<void>,
  { afterPosition = 0n, batchSize = 10_000 }: ExportOptions = {},
): Promise<Exported> {
  const horizon = await settleNow(db)
  return db.transaction(
    async (tx) => {
      await write(HEADER_LINE)
      const keys = await writePages(tx, write, readLiveKeys, keyLine, batchSize)
      const erased = await writePages(tx, write, readErasedPseudonyms, erasedLine, batchSize)
      let after = afterPosition
      let events = 0
      for (;;) {
        const { lines } = await readSettledText(tx, after, horizon, [], batchSize)
        const last = lines.at(-1)
        if (!last) return { events, keys, erased }
        await write(lines.map(toLine).join(''))
        events += lines.length
        after = BigInt(last[0])
      }
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  )
}

// Pages of rows keyed by pseudonym (their first field), each written as `line` makes it.
async function writePages<Row extends [string, ...string[]]>(
  tx: Executor,
  write: (chunk: string) => Promise<void>,
  read: (tx: Executor, after: string, batchSize: number) => Promise<Row[]>,
  line: (row: Row) => string,
  batchSize: number,
): Promise<number> {
  let written = 0
  for (let after = ''; ; ) {
    const rows = await read(tx, after, batchSize)
    const last = rows.at(-1)
    if (!last) return written
    await write(rows.map(line).join(''))
    written += rows.length
    after = last[0]
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
