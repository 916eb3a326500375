import process from 'node:process'
import type { Config } from '../config.ts'
import { Failure, isFailure } from '../errors.ts'
import { exportEvents } from '../replay/export-events.ts'
import { importEvents, readLines } from '../replay/import-events.ts'
import { badValue, parseArguments } from './arguments.ts'
import { withStorage } from './projection-command.ts'

const EXPORT_USAGE = 'events export [--after POSITION]'

export async function exportCommand(args: string[], config: Config): Promise<number> {
  const { values } = parseArguments(args, EXPORT_USAGE, { after: { type: 'string', default: '0' } })
  if (!/^(0|[1-9][0-9]{0,18})$/.test(values.after)) {
    throw badValue('after', values.after, 'a position', EXPORT_USAGE)
  }
  return withStorage(config, async (db) => {
    const exported = await exportEvents(db, writeStdout, { afterPosition: BigInt(values.after) })
    // The keys make the file as sensitive as a backup of the store: it is kept, and expired, as one.
    process.stderr.write(
      `exported ${exported.events} events, with ${exported.keys} owner key(s) and ${exported.erased} erased owner(s): keep and expire this file as a backup\n`,
    )
    return 0
  })
}

export async function importCommand(args: string[], config: Config): Promise<number> {
  const { values } = parseArguments(args, 'events import [--append] < events.ndjson', {
    append: { type: 'boolean', default: false },
  })
  return withStorage(config, async (db) => {
    const imported = await importEvents(db, readLines(process.stdin), { append: values.append }).catch(
      (error: unknown) => {
        if (!isFailure(error, 'IMPORT_REFUSED')) throw error
        throw new Failure('IMPORT_REFUSED', `import refused, nothing was imported: ${error.message}`)
      },
    )
    // Projected in the import's own transaction, as creates are: no rebuild is needed after it.
    process.stderr.write(`imported ${imported} events, each with its plant\n`)
    return 0
  })
}

// Waits for the pipe to drain, so a slow reader holds the export back instead of memory growing.
function writeStdout(chunk: string): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(chunk, (error) => (error ? reject(error) : resolve()))
  })
}
