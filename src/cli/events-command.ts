import process from 'node:process'
import type { Config } from '../config.ts'
import { exportEvents } from '../replay/export-events.ts'
import { importEvents } from '../replay/import-events.ts'
import { readLines } from '../replay/lines.ts'
import { rebuildWithProgress, withStorage } from './projection-command.ts'
import { UsageError } from './usage-error.ts'

export async function exportCommand(args: string[], config: Config): Promise<number> {
  const [flag, value, ...rest] = args
  const after = flag === undefined ? '0' : flag === '--after' ? value : undefined
  if (after === undefined || !/^(0|[1-9][0-9]{0,18})$/.test(after) || rest.length > 0) {
    throw new UsageError('usage: events export [--after POSITION]')
  }
  return withStorage(config, async (db) => {
    const exported = await exportEvents(db, writeStdout, { afterPosition: BigInt(after) })
    process.stderr.write(`exported ${exported} events\n`)
    return 0
  })
}

export async function importCommand(args: string[], config: Config): Promise<number> {
  if (args.some((arg) => arg !== '--append'))
    throw new UsageError('usage: events import [--append] < events.ndjson')
  return withStorage(config, async (db) => {
    const imported = await importEvents(db, readLines(process.stdin), { append: args.includes('--append') })
    process.stderr.write(`imported ${imported} events; rebuilding the projection\n`)
    await rebuildWithProgress(db, false)
    return 0
  })
}

// Waits for the pipe to drain, so a slow reader holds the export back instead of memory growing.
function writeStdout(chunk: string): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(chunk, (error) => (error ? reject(error) : resolve()))
  })
}
