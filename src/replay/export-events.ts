import type { Executor } from '../store/database.ts'
import { LOG_START, readLogText } from '../store/event-log.ts'

export type ExportOptions = { afterPosition?: bigint; batchSize?: number }

// Writes the settled log as NDJSON, one event per line, in the order replays read it. Values are
// copied as PostgreSQL prints them, so nothing is rounded or re-encoded on the way. The
// transaction id is left out: it means nothing to another database.
export async function exportEvents(
  db: Executor,
  write: (chunk: string) => Promise<void>,
  { afterPosition = 0n, batchSize = 10_000 }: ExportOptions = {},
): Promise<number> {
  let cursor = LOG_START
  let exported = 0
  for (;;) {
    const batch = await readLogText(db, cursor, batchSize, afterPosition)
    const last = batch.at(-1)
    if (!last) return exported
    await write(batch.map(toLine).join(''))
    exported += batch.length
    cursor = last
  }
}

type TextEvent = Awaited<ReturnType<typeof readLogText>>[number]

function toLine(event: TextEvent): string {
  return (
    `{"position":"${event.position}","streamId":${JSON.stringify(event.streamId)},` +
    `"streamVersion":${event.streamVersion},"type":${JSON.stringify(event.type)},` +
    `"schemaVersion":${event.schemaVersion},"data":${event.data},"metadata":${event.metadata},` +
    `"recordedAt":"${event.recordedAt}"}\n`
  )
}
