import process from 'node:process'
import type { Config } from '../config/config.ts'
import type { Keyring } from '../crypto/keyring.ts'
import type { Database } from '../database/database.ts'
import type { UnfitEvent } from '../event-log/sealed-parts.ts'
import { listWorkTables } from '../locks/work-tables.ts'
import type { ProjectionDiff } from '../projection/projection-diff.ts'
import { projectionStatus } from '../projection/projection-status.ts'
import { type RebuildResult, rebuildProjection } from '../projection/rebuild-projection.ts'
import { type Verification, verifyProjection } from '../projection/verify-projection.ts'
import { command } from './command.ts'
import { reportDatabaseFailure } from './command-failed.ts'
import { reportDrift } from './drift-report.ts'
import { stderrProgress } from './progress.ts'
import { withStorage } from './storage.ts'

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
        return reportDatabaseFailure(error, REBUILD_FAILED, storage)
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
  const progress = stderrProgress({ label: 'rebuild' })
  const unfit = unfitReport()
  const result = await rebuildProjection(db, keyring, {
    dryRun,
    onProgress: ({ events, total }) => progress.report({ done: events, total }),
    onUnfit: unfit.report,
  }).finally(progress.finish)
  const rate = result.seconds > 0 ? Math.round(result.events / result.seconds) : result.events
  process.stdout.write(
    `${dryRun ? 'built (dry run)' : 'rebuilt'} plants: ${result.events} events, ${result.plants} plants, ` +
      `${result.seconds.toFixed(2)} s (${rate} events/s), up to position ${result.position}` +
      `${unfit.count() > 0 ? `; ${unfit.count()} event(s) passed by, named above` : ''}\n`,
  )
  return result
}

// Each event a fold passes by, one line on stderr, once (a rebuild may fold a tail twice).
function unfitReport() {
  const seen = new Set<bigint>()
  return {
    report: (event: UnfitEvent) => {
      if (seen.has(event.position)) return
      seen.add(event.position)
      process.stderr.write(`${event.message}: passed by, it makes no row\n`)
    },
    count: () => seen.size,
  }
}

async function verify(config: Config): Promise<number> {
  return withStorage(
    config,
    async (db, storage) => {
      const progress = stderrProgress({ label: 'verify' })
      const unfit = unfitReport()
      let verified: Verification
      try {
        verified = await verifyProjection(db, storage.keyring, {
          onProgress: ({ events, total }) => progress.report({ done: events, total }),
          onUnfit: unfit.report,
        }).finally(progress.finish)
      } catch (error) {
        return reportDatabaseFailure(error, 'projection verify failed', storage)
      }
      const { events, diff } = verified
      const drift = reportDrift(
        diff,
        `the projection matches the fold of the log (${events} events)`,
        `the projection differs from the fold of the log (${events} events)`,
      )
      if (unfit.count() === 0) return drift
      process.stderr.write(
        `the log holds ${unfit.count()} event(s) that do not open, or do not fit where they stand (named above): the fold passed them by\n`,
      )
      return 1
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
