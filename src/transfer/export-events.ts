import { sql } from 'drizzle-orm'
import { type Database, type Executor, rowsOf } from '../database/database.ts'
import { settleNow } from '../event-log/horizon.ts'
import { type ExportedText, readSettledText } from '../event-log/reading.ts'
import { events } from '../event-log/schema.ts'
import { erasedLine, HEADER_LINE, keyLine } from './export-format.ts'
import { readErasedPseudonyms, readLiveKeys, readWrappingKeyIds } from './exported-keys.ts'

export type ExportOptions = {
  afterPosition?: bigint
  batchSize?: number
  // After each batch of events written: how many so far, of how many the export will write.
  onProgress?: (progress: { events: number; total: number }) => void
}

export type Exported = {
  events: number
  keys: number
  erased: number
  // The ids of the key-encryption keys its keys are wrapped under: a restore needs each of them.
  keyEncryptionKeyIds: string[]
}

// Writes an export (transfer/export-format.ts): the header, the owners' keys and the erased
// pseudonyms, then the settled log after `afterPosition`, one event per line, in position order.
// It first waits for the transactions that may still commit a position at or below the last one
// handed out (event-log/horizon.ts), then reads everything in one snapshot (REPEATABLE READ): every event
// up to that horizon and none above it, and the keys as they stood then, an owner whose erasure
// has begun among the erased. So the next export, after this one's last position, misses nothing
// that commits meanwhile, and no export taken after an erasure holds the owner's key. Values are
// copied as PostgreSQL prints them, so nothing is rounded or re-encoded on the way. The transaction
// id is left out: it means nothing to another database.
export async function exportEvents(
  db: Database,
  write: (chunk: string) => Promise<void>,
  { afterPosition = 0n, batchSize = 10_000, onProgress }: ExportOptions = {},
): Promise<Exported> {
  const horizon = await settleNow(db)
  return db.transaction(
    async (tx) => {
      await write(HEADER_LINE)
      const keyEncryptionKeyIds = await readWrappingKeyIds(tx)
      const keys = await writePages(tx, write, readLiveKeys, keyLine, batchSize)
      const erased = await writePages(tx, write, readErasedPseudonyms, erasedLine, batchSize)
      let after = afterPosition
      let events = 0
      const total = onProgress ? await countUpTo(tx, afterPosition, horizon) : 0
      for (;;) {
        const { rows: lines } = await readSettledText(tx, after, horizon, [], batchSize)
        const last = lines.at(-1)
        if (!last) return { events, keys, erased, keyEncryptionKeyIds }
        await write(lines.map(toLine).join(''))
        events += lines.length
        after = BigInt(last[0])
        onProgress?.({ events, total: Math.max(total, events) })
      }
    },
    { isolationLevel: 'repeatable read', accessMode: 'read only' },
  )
}

// How many events the snapshot holds after `after` up to the horizon: what the export will write.
async function countUpTo(tx: Executor, after: bigint, horizon: bigint): Promise<number> {
  const [row] = rowsOf<{ n: number }>(
    await tx.execute(
      sql`select count(*)::int as n from ${events} where ${events.position} > ${after.toString()}::bigint and ${events.position} <= ${horizon.toString()}::bigint`,
    ),
  )
  return Number(row?.n ?? 0)
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
