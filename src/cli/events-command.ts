import { Buffer } from 'node:buffer'
import { fstatSync } from 'node:fs'
import process from 'node:process'
import { Failure, isFailure } from '../shared/errors.ts'
import { exportEvents } from '../transfer/export-events.ts'
import { importEvents, readLines } from '../transfer/import-events.ts'
import { badValue } from './arguments.ts'
import { command } from './command.ts'
import { keysNeededLine } from './kept-keys.ts'
import { stderrProgress } from './progress.ts'
import { withStorage } from './storage.ts'

export const eventsExportCommand = command({
  name: 'events export',
  args: '[--after <position>]',
  purpose: 'write the event log as NDJSON to stdout',
  notes: ['--after: only the events after this position (0 by default: all)'],
  options: { after: { type: 'string', default: '0' } },
  reads: ['storage'],
  run: async ({ values }, config) => {
    if (!/^(0|[1-9][0-9]{0,18})$/.test(values.after)) throw badValue('after', values.after, 'a position')
    return withStorage(
      config,
      async (db) => {
        // Progress on stderr only: stdout is the export.
        const progress = stderrProgress({ label: 'export' })
        const exported = await exportEvents(db, writeStdout, {
          afterPosition: BigInt(values.after),
          onProgress: ({ events, total }) => progress.report({ done: events, total }),
        })
        progress.finish()
        // The keys make the file as sensitive as a backup of the store: it is kept, and expired, as
        // one. They are wrapped: without the KEKs named here, nothing restores it.
        process.stderr.write(
          `exported ${exported.events} events, with ${exported.keys} owner key(s) and ${exported.erased} erased owner(s): keep and expire this file as a backup\n${keysNeededLine(exported.keyEncryptionKeyIds, config)}\n`,
        )
        return 0
      },
      { long: true },
    )
  },
})

export const eventsImportCommand = command({
  name: 'events import',
  args: '[--append] < events.ndjson',
  purpose: 'read exported NDJSON from stdin into the log, each event with its plant',
  notes: [
    '--append: into a store that already has events (else it must be empty)',
    'the import projects as it goes: no rebuild is needed after it',
  ],
  options: { append: { type: 'boolean', default: false } },
  reads: ['storage'],
  refusals: 'the file was refused, nothing imported (the line and the rule are named)',
  run: async ({ values }, config) =>
    withStorage(
      config,
      async (db, storage) => {
        const input = countedStdin()
        const progress = stderrProgress({ label: 'import' })
        const imported = await importEvents(db, storage.keyring, readLines(input.chunks), {
          append: values.append,
          onStaged: ({ events }) => progress.report({ done: events, fraction: input.fraction() }),
          onStep: progress.step,
        })
          .catch((error: unknown) => {
            if (!isFailure(error, 'IMPORT_REFUSED')) throw error
            throw new Failure('IMPORT_REFUSED', `import refused, nothing was imported: ${error.message}`)
          })
          .finally(progress.finish)
        // Projected in the import's own transaction, as creates are: no rebuild is needed after it.
        process.stderr.write(`imported ${imported} events, each with its plant\n`)
        return 0
      },
      { long: true },
    ),
})

// Stdin's chunks, and how much of it they have read when it is a file (a pipe has no size).
function countedStdin(): { chunks: AsyncIterable<Uint8Array | string>; fraction: () => number | undefined } {
  let size: number | undefined
  try {
    const stat = fstatSync(0)
    if (stat.isFile() && stat.size > 0) size = stat.size
  } catch {
    // no descriptor 0 to ask: no fraction
  }
  let bytes = 0
  async function* chunks() {
    for await (const chunk of process.stdin as AsyncIterable<Uint8Array | string>) {
      bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length
      yield chunk
    }
  }
  return { chunks: chunks(), fraction: () => (size === undefined ? undefined : bytes / size) }
}

// Waits for the pipe to drain, so a slow reader holds the export back instead of memory growing.
function writeStdout(chunk: string): Promise<void> {
  return new Promise((resolve, reject) => {
    process.stdout.write(chunk, (error) => (error ? reject(error) : resolve()))
  })
}
