import process from 'node:process'
import { type Config, IN_MEMORY } from '../config/config.ts'
import { describeUpgrade } from '../event-log/upgrade.ts'
import { listWorkTables } from '../event-log/work-tables.ts'
import type { Keyring } from '../keys/keyring.ts'
import { describeMove, moveFromPglite } from '../replay/pglite-move.ts'
import { progressReporter } from '../replay/progress.ts'
import { projectionStatus } from '../replay/projection-status.ts'
import { type RebuildResult, rebuildProjection } from '../replay/rebuild-projection.ts'
import {
  isInSync,
  type PlantRow,
  type ProjectionDiff,
  verifyProjection,
} from '../replay/verify-projection.ts'
import { Failure } from '../shared/errors.ts'
import { openStorage } from '../start/open-store.ts'
import { type Database, type DatabaseHandle, openPostgres } from '../store/database.ts'
import { command } from './command.ts'
import { reportDatabaseFailure } from './command-failed.ts'

export const dbMigrateCommand = command({
  name: 'db migrate',
  purpose: 'apply the migrations (and move a DATA_DIR of the PGlite engine into PostgreSQL)',
  reads: ['storage'],
  // Opening the storage applies the migrations.
  run: (_parsed, config) => withStorage(config, async () => 0),
})

export const projectionRebuildCommand = command({
  name: 'projection rebuild',
  args: '[--dry-run]',
  purpose: 'fold the event log into a fresh projection and swap it in',
  notes: ['--dry-run: build it and compare it with the live one, swapping nothing'],
  options: { 'dry-run': { type: 'boolean', default: false } },
  reads: ['storage'],
  refusals: 'the rebuild failed and nothing was swapped, or (--dry-run) the projection differs from the log',
  run: ({ values }, config) => rebuild(values['dry-run'], config),
})

export const projectionVerifyCommand = command({
  name: 'projection verify',
  purpose: 'exit 1 and show the drift when the projection differs from the log',
  reads: ['storage'],
  refusals: 'the projection differs from the fold of the log (the drift is shown)',
  run: (_parsed, config) => verify(config),
})

export const projectionStatusCommand = command({
  name: 'projection status',
  purpose: 'the last rebuild, the head of the log, and events lacking their row',
  reads: ['storage'],
  run: (_parsed, config) => status(config),
})

async function rebuild(dryRun: boolean, config: Config): Promise<number> {
  return withStorage(
    config,
    async (db, storage) => {
      let diff: ProjectionDiff | undefined
      try {
        ;({ diff } = await rebuildWithProgress(db, storage.keyring, dryRun))
      } catch (error) {
        return reportDatabaseFailure(error, REBUILD_FAILED)
      }
      if (!diff) return 0
      return reportDrift(
        diff,
        'dry run: the live projection already matches the log; nothing swapped',
        'dry run: nothing swapped; a rebuild would fix this drift',
      )
    },
    { long: true },
  )
}

export const REBUILD_FAILED = 'projection rebuild failed, nothing was swapped'

export async function rebuildWithProgress(
  db: Database,
  keyring: Keyring,
  dryRun: boolean,
): Promise<RebuildResult> {
  const progress = progressReporter({
    write: (text) => process.stderr.write(text),
    tty: process.stderr.isTTY === true,
    clock: () => performance.now(),
  })
  const result = await rebuildProjection(db, keyring, { dryRun, onProgress: progress.report })
  progress.finish()
  const rate = result.seconds > 0 ? Math.round(result.events / result.seconds) : result.events
  process.stdout.write(
    `${dryRun ? 'built (dry run)' : 'rebuilt'} plants: ${result.events} events, ${result.plants} plants, ` +
      `${result.seconds.toFixed(2)} s (${rate} events/s), up to position ${result.position}\n`,
  )
  return result
}

async function verify(config: Config): Promise<number> {
  return withStorage(
    config,
    async (db, storage) => {
      const { events, diff } = await verifyProjection(db, storage.keyring)
      return reportDrift(
        diff,
        `the projection matches the fold of the log (${events} events)`,
        `the projection differs from the fold of the log (${events} events)`,
      )
    },
    { long: true },
  )
}

async function status(config: Config): Promise<number> {
  return withStorage(config, async (db) => {
    const { checkpoint, head, events, sinceCheckpoint, behind } = await projectionStatus(db)
    const workTables = await listWorkTables(db)
    const at =
      checkpoint === undefined
        ? 'never rebuilt'
        : `rebuilt at position ${checkpoint}, ${sinceCheckpoint} event(s) since`
    const state = behind === 0 ? 'up to date' : `${behind} event(s) behind: run projection rebuild`
    process.stdout.write(
      `projection plants: ${at}; log head: position ${head} (${events} events); ${state}\n`,
    )
    for (const { name, bytes, alive } of workTables) {
      const size = `${(bytes / 1024 / 1024).toFixed(1)} MB`
      process.stdout.write(
        alive
          ? `in progress: ${name} (${size}), a rebuild or import running now\n`
          : `left over: ${name} (${size}) of a rebuild or import that died; the next projection rebuild or events import drops it\n`,
      )
    }
    return 0
  })
}

// On an embedded DATA_DIR that a service holds, the command works beside it, on its server.
// `long`: the long work of the CLI (an import, an export, a rebuild, a verification, a rotation)
// runs on connections of its own without the service's statement timeout
// (DATABASE_STATEMENT_TIMEOUT_MS, sized for requests): one statement of it may rightly take longer.
export async function withStorage(
  config: Config,
  run: (db: Database, storage: DatabaseHandle) => Promise<number>,
  { long = false } = {},
): Promise<number> {
  // A store in memory lives inside its server process: a command would only see an empty one of its own.
  if (config.storage.kind === 'memory') {
    throw new Failure(
      'BAD_SETTING',
      `DATA_DIR=${IN_MEMORY} lives inside the server process; this command cannot reach it`,
    )
  }
  const storage = await openStorage(config.storage, {
    onProgress: (progress) => process.stderr.write(`${describeUpgrade(progress)}\n`),
    beside: true,
  })
  const untimed = long ? openPostgres({ ...storage.settings, statementTimeoutMs: 0 }) : undefined
  try {
    const moved = storage.dataDir
      ? await moveFromPglite(storage.db, storage.dataDir, storage.settings.keys ?? [])
      : undefined
    if (moved) process.stderr.write(`${describeMove(moved)}\n`)
    if (!untimed) return await run(storage.db, storage)
    return await run(untimed.db, { ...storage, db: untimed.db, keyring: untimed.keyring })
  } finally {
    await untimed?.close()
    await storage.close()
  }
}

// Exit 0 with `inSync`, or exit 1 with `drifted` and a readable account of the drift: counts,
// then a few rows of each kind.
function reportDrift(diff: ProjectionDiff, inSync: string, drifted: string): number {
  if (isInSync(diff)) {
    process.stdout.write(`${inSync}\n`)
    return 0
  }
  const lines = [`${drifted}:`]
  const { missing, extra, changed } = diff
  if (missing.count > 0) {
    lines.push(`missing: ${missing.count} row(s) the log has and the projection lacks, e.g.`)
    lines.push(...missing.examples.map((row) => `  ${describeRow(row)}`))
  }
  if (extra.count > 0) {
    lines.push(`extra: ${extra.count} row(s) in the projection that no event explains, e.g.`)
    lines.push(...extra.examples.map((row) => `  ${describeRow(row)}`))
  }
  if (changed.count > 0) {
    lines.push(`changed: ${changed.count} row(s) whose values differ from the log, e.g.`)
    for (const { expected, actual } of changed.examples) {
      lines.push(`  log:        ${describeRow(expected)}`, `  projection: ${describeRow(actual)}`)
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`)
  return 1
}

function describeRow(row: PlantRow): string {
  return `owner=${JSON.stringify(row.owner)} id=${row.id} name=${JSON.stringify(row.name)} tag=${JSON.stringify(row.tag)} position=${row.position}`
}
