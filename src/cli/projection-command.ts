import process from 'node:process'
import type { Config } from '../config.ts'
import { progressReporter } from '../replay/progress.ts'
import { isInSync } from '../replay/projection-diff.ts'
import { projectionStatus } from '../replay/projection-status.ts'
import { type RebuildResult, rebuildProjection } from '../replay/rebuild-projection.ts'
import { verifyProjection } from '../replay/verify-projection.ts'
import type { Database } from '../store/database.ts'
import { openStorage } from '../store/open-storage.ts'
import { parseArguments } from './arguments.ts'
import { describeDiff } from './print-diff.ts'

export async function rebuildCommand(args: string[], config: Config): Promise<number> {
  const { values } = parseArguments(args, 'projection rebuild [--dry-run]', {
    'dry-run': { type: 'boolean', default: false },
  })
  const dryRun = values['dry-run']
  return withStorage(config, async (db) => {
    const result = await rebuildWithProgress(db, dryRun)
    if (!result.diff) return 0
    if (isInSync(result.diff)) {
      process.stdout.write('dry run: the live projection already matches the log; nothing swapped\n')
      return 0
    }
    process.stdout.write(
      `dry run: nothing swapped; a rebuild would fix this drift:\n${describeDiff(result.diff)}`,
    )
    return 1
  })
}

export async function rebuildWithProgress(db: Database, dryRun: boolean): Promise<RebuildResult> {
  const progress = progressReporter({
    write: (text) => process.stderr.write(text),
    tty: process.stderr.isTTY === true,
    clock: () => performance.now(),
  })
  const result = await rebuildProjection(db, { dryRun, onProgress: progress.report })
  progress.finish()
  const rate = result.seconds > 0 ? Math.round(result.events / result.seconds) : result.events
  process.stdout.write(
    `${dryRun ? 'built (dry run)' : 'rebuilt'} plants: ${result.events} events, ${result.plants} plants, ` +
      `${result.seconds.toFixed(2)} s (${rate} events/s), up to position ${result.position}\n`,
  )
  return result
}

export async function verifyCommand(args: string[], config: Config): Promise<number> {
  parseArguments(args, 'projection verify', {})
  return withStorage(config, async (db) => {
    const { events, diff } = await verifyProjection(db)
    if (isInSync(diff)) {
      process.stdout.write(`the projection matches the fold of the log (${events} events)\n`)
      return 0
    }
    process.stdout.write(
      `the projection differs from the fold of the log (${events} events):\n${describeDiff(diff)}`,
    )
    return 1
  })
}

export async function statusCommand(args: string[], config: Config): Promise<number> {
  parseArguments(args, 'projection status', {})
  return withStorage(config, async (db) => {
    const { checkpoint, head, events, sinceCheckpoint, behind } = await projectionStatus(db)
    const at =
      checkpoint === undefined
        ? 'never rebuilt'
        : `rebuilt at position ${checkpoint}, ${sinceCheckpoint} event(s) since`
    const state = behind === 0 ? 'up to date' : `${behind} event(s) behind: run projection rebuild`
    process.stdout.write(
      `projection plants: ${at}; log head: position ${head} (${events} events); ${state}\n`,
    )
    return 0
  })
}

export async function withStorage(config: Config, run: (db: Database) => Promise<number>): Promise<number> {
  const storage = await openStorage(config.storage)
  try {
    return await run(storage.db)
  } finally {
    await storage.close()
  }
}
