import { Type } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import type { Database } from '../store/database.ts'
import { advancePositionSequence, appendExported, isLogEmpty } from '../store/event-import.ts'
import { blockAppends } from '../store/event-log.ts'
import { postgresErrorCode } from '../store/unavailable.ts'

export class ImportRefused extends Error {
  override name = 'ImportRefused'
}

// The envelope of one exported line; `data` stays as written and is checked when replayed.
const ExportedEvent = Type.Object({
  position: Type.String({ pattern: '^[1-9][0-9]{0,18}$' }),
  streamId: Type.String({ minLength: 1 }),
  streamVersion: Type.Integer({ minimum: 1, maximum: 2147483647 }),
  type: Type.String({ minLength: 1 }),
  schemaVersion: Type.Integer({ minimum: 0, maximum: 2147483647 }),
  data: Type.Object({}),
  metadata: Type.Object({ owner: Type.String(), requestId: Type.String() }),
  recordedAt: Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}(\\.\\d{1,6})?Z$' }),
})

export type ImportOptions = { append?: boolean; batchSize?: number }

// Reads exported lines into the log in one transaction: all of them or, on any refusal, none.
// Into an empty store the events keep their positions; with `append` they follow the head. The
// (stream, version) key still holds either way: a clash refuses the whole import.
export async function importEvents(
  db: Database,
  lines: AsyncIterable<string>,
  { append = false, batchSize = 5_000 }: ImportOptions = {},
): Promise<number> {
  try {
    return await db.transaction(async (tx) => {
      if (!append) {
        // Keeps every other writer out while the empty store is filled.
        await blockAppends(tx)
        if (!(await isLogEmpty(tx))) {
          throw new ImportRefused('the event log is not empty: import into an empty store, or pass --append')
        }
      }
      let imported = 0
      let batch: string[] = []
      const flush = async () => {
        if (batch.length > 0) await appendExported(tx, `[${batch.join(',')}]`, !append)
        imported += batch.length
        batch = []
      }
      let lineNumber = 0
      for await (const line of lines) {
        lineNumber++
        if (line.trim() === '') continue
        checkLine(line, lineNumber)
        batch.push(line)
        if (batch.length >= batchSize) await flush()
      }
      await flush()
      if (!append) await advancePositionSequence(tx)
      return imported
    })
  } catch (error) {
    if (postgresErrorCode(error) === '23505') {
      throw new ImportRefused(`an imported event clashes with one already stored: ${rootMessage(error)}`)
    }
    throw error
  }
}

function checkLine(line: string, lineNumber: number): void {
  let value: unknown
  try {
    value = JSON.parse(line)
  } catch {
    throw new ImportRefused(`line ${lineNumber}: not JSON`)
  }
  if (Value.Check(ExportedEvent, value)) return
  const first = Value.Errors(ExportedEvent, value).First()
  throw new ImportRefused(
    `line ${lineNumber}: ${first ? `${first.path || '/'} ${first.message}` : 'invalid'}`,
  )
}

function rootMessage(error: unknown): string {
  let root = error as { cause?: unknown; detail?: string; message?: string }
  while (root.cause) root = root.cause as typeof root
  return root.detail ?? String(root.message)
}

// Splits a byte or text stream into lines without holding more than a chunk and a line.
export async function* readLines(chunks: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  let pending = ''
  for await (const chunk of chunks) {
    pending += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true })
    let start = 0
    for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n', start)) {
      yield pending.slice(start, newline).replace(/\r$/, '')
      start = newline + 1
    }
    pending = pending.slice(start)
  }
  pending += decoder.decode()
  if (pending !== '') yield pending
}
