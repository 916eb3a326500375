import type { Keyring } from '../crypto/keyring.ts'
import type { Database } from '../database/database.ts'
import { events as eventLog } from '../event-log/schema.ts'
import type { HeldLock } from '../locks/advisory-lock.ts'
import { whileAppendsBlocked } from '../locks/append-lock.ts'
import { clearDeadWorkTables, withWorkTable, workTableName } from '../locks/work-tables.ts'
import { projectionStatus } from '../projection/projection-status.ts'
import { databaseMessage, postgresErrorCode } from '../shared/database-error.ts'
import { Failure, isFailure } from '../shared/errors.ts'
import { lineChecker } from './import-lines.ts'
import {
  appendStaged,
  countStagedOwners,
  createStaging,
  dropStaging,
  firstClashInFile,
  firstClashWithStore,
  firstOwnerClash,
  isLogEmpty,
  keyPlainOwners,
  lockStagedOwners,
  type StagedLine,
  type Staging,
  stageLines,
} from './import-staging.ts'

// No event comes near this: a name and a tag of 1,024 code points, each escaped as \uXXXX pairs,
// take 24 KiB. A longer line is refused before it is held in memory.
export const MAX_LINE_BYTES = 64 * 1024

// PostgreSQL's lock table holds max_locks_per_transaction (64 by default) times the connections.
const MAX_OWNER_LOCKS = 1_000

export type ImportOptions = {
  append?: boolean
  batchSize?: number
  // After each batch of lines checked and staged: how many events so far.
  onStaged?: (progress: { events: number }) => void
  // Each step after the staging, before it runs (they are single statements, without figures).
  onStep?: (step: string) => void
}

// Imports an export (transfer/export-format.ts), all of it or, on any refusal, nothing. Three steps:
// every line is checked as the live path checks an event (a sealed one opened with its owner's key
// from the file) and staged, in short transactions of its own (a slow input holds nothing); the
// lines are checked against each other; then, holding the log's append lock only for this step,
// they are checked against the store (an owner it has, a pseudonym it erased) and the keys, the
// erased pseudonyms and the events appended with their projection in one transaction. Into an
// empty store the events keep their positions; with `append` they follow the head. The events of
// a version 1 (plaintext) export are sealed on the way in, under their owner's key. Every key is
// unwrapped and wrapped again in the service (`keyring`: its key-encryption keys open the file's
// keys, its first wraps them). The tables of imports and rebuilds that died are dropped first.
export async function importEvents(
  db: Database,
  keyring: Keyring,
  lines: AsyncIterable<string>,
  { append = false, batchSize = 500, onStaged, onStep }: ImportOptions = {},
): Promise<number> {
  await clearDeadWorkTables(db)
  if (!append && !(await isLogEmpty(db))) throw new Failure('IMPORT_REFUSED', await nonEmptyStore(db))
  const name = workTableName('import_staging_')
  const made: { staging?: Staging } = {}
  try {
    return await withWorkTable(db, name, 'nothing was imported; run it again', (claim) =>
      importStaged(db, keyring, lines, { claim, name, made }, { append, batchSize, onStaged, onStep }),
    )
  } finally {
    // After the lock's transaction ends, which holds the table while it appends from it.
    if (made.staging) await dropStaging(db, made.staging).catch(() => {})
  }
}

// Stages the lines in the table `name` (kept in `made`), holding `claim`, its lock, and appends
// them; a failure, as a refusal.
async function importStaged(
  db: Database,
  keyring: Keyring,
  lines: AsyncIterable<string>,
  { claim, name, made }: { claim: HeldLock; name: string; made: { staging?: Staging } },
  { append = false, batchSize = 500, onStaged, onStep }: ImportOptions,
): Promise<number> {
  try {
    const staging = await createStaging(db, name)
    made.staging = staging
    const check = lineChecker({ append, keyring })
    let events = 0
    // A batch's lines are checked, and their refusals taken in line order.
    const stageBatch = async (batch: { text: string; line: number }[]) => {
      const checked = await Promise.all(batch.map(({ text, line }) => check(text, line)))
      const staged: StagedLine[] = []
      for (const [index, line] of checked.entries()) {
        if (line === undefined) continue
        if ('refused' in line)
          throw new Failure('IMPORT_REFUSED', `line ${batch[index]?.line}: ${line.refused}`)
        if (line.kind === 'event') events++
        staged.push(line)
      }
      // The table's lock lost, another command may drop it as a dead run's: said, not guessed.
      await claim.prove()
      await stageLines(db, staging, staged)
      onStaged?.({ events })
    }
    let batch: { text: string; line: number }[] = []
    let lineNumber = 0
    for await (const text of lines) {
      lineNumber++
      if (text.trim() === '') continue
      batch.push({ text, line: lineNumber })
      if (batch.length >= batchSize) {
        await stageBatch(batch)
        batch = []
      }
    }
    await stageBatch(batch)
    if (events === 0) {
      throw new Failure(
        'IMPORT_REFUSED',
        'the input holds no events (an empty or truncated file?); an empty store needs no import',
      )
    }
    onStep?.(`${events} events staged; checking them against each other`)
    const inFile = await firstClashInFile(db, staging, !append)
    if (inFile) throw new Failure('IMPORT_REFUSED', `line ${inFile.line}: ${inFile.rule}`)
    const checked = staging
    // Appended, the file's owners are locked out of the log for the final step, as a create locks
    // its owner; too many locks for the lock table, and the whole log is.
    const fewOwners = append && (await countStagedOwners(db, checked)) <= MAX_OWNER_LOCKS
    onStep?.(`checking them against the store and appending them with their plants, in one transaction`)
    // Fenced: appended in the transaction of the staging table's lock, which an erasure waits for
    // (erasure/leftovers.ts), they commit with its release, or, the lock lost, not at all.
    const appended = await whileAppendsBlocked(
      claim.fenced,
      eventLog,
      async (tx) => {
        if (!append && !(await isLogEmpty(tx))) throw new Failure('IMPORT_REFUSED', await nonEmptyStore(db))
        const owner = await firstOwnerClash(tx, checked)
        if (owner) throw new Failure('IMPORT_REFUSED', `line ${owner.line}: ${owner.rule}`)
        await keyPlainOwners(tx, keyring, checked)
        const clash = await firstClashWithStore(tx, checked)
        if (clash) throw new Failure('IMPORT_REFUSED', `line ${clash.line}: ${clash.rule}`)
        return appendStaged(tx, checked, !append)
      },
      { lock: fewOwners ? lockStagedOwners(checked) : undefined },
    )
    return appended
  } catch (error) {
    throw asRefusal(error)
  }
}

// What to run when the store already holds events, after a finished import or a crashed one.
async function nonEmptyStore(db: Database): Promise<string> {
  const { events, head, behind } = await projectionStatus(db)
  const held = `the event log is not empty: it holds ${events} event(s), up to position ${head}`
  if (behind > 0) {
    return `${held}, and ${behind} of them lack their projected row (an import or rebuild was interrupted?): run \`bun run cli projection rebuild\`; to add more events, pass --append`
  }
  return `${held}, all projected: import into an empty store, or pass --append to add new plants`
}

// A refusal by the database that the checks did not foresee, in the same one-line form.
function asRefusal(error: unknown): unknown {
  if (isFailure(error, 'LOG_BUSY')) return new Failure('IMPORT_REFUSED', error.message)
  if (isFailure(error, 'IMPORT_REFUSED') || isFailure(error, 'LOCK_LOST')) return error
  if (postgresErrorCode(error) === undefined) return error
  return new Failure('IMPORT_REFUSED', `the database refused the import: ${databaseMessage(error)}`)
}

const encoder = new TextEncoder()

// Splits a byte or text stream into lines, each decoded as strict UTF-8, without holding more than
// a chunk and a line: a line longer than `maxLineBytes`, or not UTF-8, is refused by its number.
export async function* readLines(
  chunks: AsyncIterable<Uint8Array | string>,
  maxLineBytes = MAX_LINE_BYTES,
): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })
  let pending: Uint8Array[] = []
  let pendingBytes = 0
  let lineNumber = 0
  const take = (piece: Uint8Array) => {
    if (pendingBytes + piece.length > maxLineBytes) {
      throw new Failure(
        'IMPORT_REFUSED',
        `line ${lineNumber + 1}: longer than ${maxLineBytes} bytes, more than any event takes`,
      )
    }
    pending.push(piece)
    pendingBytes += piece.length
  }
  const line = () => {
    lineNumber++
    const bytes = pending.length === 1 ? (pending[0] as Uint8Array) : concat(pending, pendingBytes)
    pending = []
    pendingBytes = 0
    try {
      return decoder.decode(bytes).replace(/\r$/, '')
    } catch {
      throw new Failure('IMPORT_REFUSED', `line ${lineNumber}: not valid UTF-8`)
    }
  }
  for await (const chunk of chunks) {
    const bytes = typeof chunk === 'string' ? encoder.encode(chunk) : chunk
    let start = 0
    for (let newline = bytes.indexOf(10); newline >= 0; newline = bytes.indexOf(10, start)) {
      take(bytes.subarray(start, newline))
      yield line()
      start = newline + 1
    }
    if (start < bytes.length) take(bytes.slice(start))
  }
  if (pendingBytes > 0) yield line()
}

function concat(pieces: Uint8Array[], length: number): Uint8Array {
  const joined = new Uint8Array(length)
  let offset = 0
  for (const piece of pieces) {
    joined.set(piece, offset)
    offset += piece.length
  }
  return joined
}
