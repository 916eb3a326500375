import { sql } from 'drizzle-orm'
import type { Database, Executor, Transaction } from '../database/database.ts'
import { rowsOf } from '../database/database.ts'
import { erasedOwners, events, ownerGenerations, ownerKeys, plants } from '../event-log/schema.ts'
import { runHolding } from '../locks/advisory-lock.ts'
import { withErasureLock } from '../locks/maintenance-lock.ts'
import { lockOwner } from '../locks/owner-lock.ts'
import { clearDeadWorkTables } from '../locks/work-tables.ts'
import { databaseMessage, isDatabaseUnavailable, postgresErrorCode } from '../shared/database-error.ts'
import { Failure, isFailure } from '../shared/errors.ts'
import { inSpan, type Tracing } from '../tracing/tracing.ts'
import { awaitImports } from './leftovers.ts'

// An owner whose erasure has begun: their pseudonym, and the position of the OwnerErased notice.
export type PendingErasure = { pseudonym: string; notice: bigint }

// Steps 2 and 3 of an erasure (docs/erasure.md), when the store has a feed (feed/erasure-feed.ts).
export type ErasureFeed = {
  // Resolves once the stream holds the log up to `position` (the notice), publishing it itself if
  // no instance does; rejects after a bounded wait.
  awaitPublished: (position: bigint) => Promise<void>
  // Removes every message of the owner (`pseudonym`, and `owner`, the subject, for the messages
  // published before their events were sealed) from the stream.
  purge: (erasure: { pseudonym: string; owner: string }) => Promise<void>
}

export type ErasureOptions = {
  feed?: ErasureFeed
  now?: () => Date
  // How long the erasure waits for an import that is running (its table may hold the owner).
  waitMs?: number
  // Told, once each, what the erasure waits for: a rebuild, an import.
  onWait?: (what: string) => void
  // false: a rebuild running, step 1 fails at once (LOCK_HELD) rather than waiting for it to end.
  waitForRebuild?: boolean
  // A span for the erasure and one for each step: the owner's subject is in none of them.
  tracing?: Tracing
}

// `plants`: how many plants the owner had when each erasure this run completed began (0: unknown, or
// erased already); `completed`: how many it completed.
export type ErasureResult = { plants: number; completed: number }

// Erases `owner` (a token's subject): a resumable sequence, not one transaction.
// 1. Under the owner's append lock, the key is marked erasing (a create from then on makes a new
//    key: a new owner), their rows of `plants` and their generation are deleted and an
//    OwnerErased event naming the pseudonym is appended. From here the owner is hidden everywhere.
// 2. With a feed, the stream is made to hold the notice (the relay publishes it in log order).
// 3. The owner's messages are erased from the stream.
// 4. Once no import that may have read the owner runs, the key is deleted and the pseudonym
//    recorded as erased.
// 5. Always, a rerun after a crash included: the work tables of rebuilds and imports that died
//    (their rows in the clear) are dropped, and PostgreSQL's statistics of the tables it touched
//    gathered again (they may show the subject among their common values).
// Every pending erasure of the same subject (an earlier run that stopped after step 1) is
// completed too, and counted with the plants it had.
export async function eraseOwner(
  db: Database,
  owner: string,
  {
    feed,
    now = () => new Date(),
    waitMs = 30_000,
    onWait = () => {},
    waitForRebuild = true,
    tracing,
  }: ErasureOptions = {},
): Promise<ErasureResult> {
  const root = tracing?.startSpan('erase owner')
  try {
    const step = <T>(name: string, work: () => Promise<T>) =>
      inSpan(tracing, name, { parent: root?.traceparent }, work)
    const begun = await step('erasure: hide the owner', () =>
      beginErasure(db, owner, now(), waitForRebuild, () =>
        onWait('a projection rebuild is running: the erasure waits for it to finish'),
      ),
    )
    const pending = await pendingErasures(db, owner)
    let plantsErased = 0
    try {
      for (const erasure of pending) {
        if (feed) {
          await step('erasure: await the notice in the stream', () => feed.awaitPublished(erasure.notice))
          await step('erasure: purge the stream', () => feed.purge({ pseudonym: erasure.pseudonym, owner }))
        }
        plantsErased +=
          erasure.pseudonym === begun?.pseudonym ? begun.plants : await plantsOf(db, erasure.pseudonym)
        // Fenced: the key is deleted in the transaction of the lock that keeps imports out.
        const importsOut = await step('erasure: await imports', () => awaitImports(db, { waitMs, onWait }))
        await step('erasure: delete the key', () =>
          runHolding(importsOut, ({ fenced }) => completeErasure(fenced, erasure.pseudonym, now())),
        )
      }
      await step('erasure: drop dead work tables', () => clearDeadWorkTables(db))
      await step('erasure: refresh statistics', () => refreshStatistics(db))
    } catch (error) {
      // The owner is hidden from step 1 on: a database that fails a later step leaves it pending.
      const fromDatabase = postgresErrorCode(error) !== undefined || isDatabaseUnavailable(error)
      if (pending.length === 0 || isFailure(error) || !fromDatabase) throw error
      throw new Failure('ERASURE_PENDING', databaseMessage(error), {}, { cause: error })
    }
    root?.end({ attributes: { 'plant_store.erasure.completed': pending.length } })
    return { plants: plantsErased, completed: pending.length }
  } catch (error) {
    root?.end({ error })
    throw error
  }
}

// Step 1. Excludes a projection rebuild (locks/maintenance-lock.ts): a rebuild's table filled
// before it would bring the owner's rows back at its swap. Fenced: it commits in the lock's own
// transaction, so a first step whose lock was lost on the way (a rebuild may have begun since)
// commits nothing. A rebuild's lock is waited for as long as the rebuild runs, unless `wait` is false.
async function beginErasure(
  db: Database,
  owner: string,
  at: Date,
  wait: boolean,
  onWait: () => void,
): Promise<{ pseudonym: string; plants: number } | undefined> {
  const refuse = () => {
    throw new Failure(
      'LOCK_HELD',
      'a projection rebuild is running and the erasure was told not to wait: nothing was erased; run it again once the rebuild ends',
    )
  }
  return withErasureLock(db, { wait, onWait, otherwise: refuse }, (lock) =>
    lock.fenced.transaction((tx) => hideOwner(tx, owner, at)),
  )
}

async function hideOwner(tx: Transaction, owner: string, at: Date) {
  await tx.execute(lockOwner(owner))
  const [key] = rowsOf<{ pseudonym: string }>(
    await tx.execute(sql`select ${ownerKeys.pseudonym} as pseudonym from ${ownerKeys}
      where ${ownerKeys.owner} = ${owner} and not ${ownerKeys.erasing} for update`),
  )
  if (!key) return undefined
  const [counted] = rowsOf<{ plants: number }>(
    await tx.execute(sql`with deleted as (delete from ${plants} where ${plants.owner} = ${owner} returning 1)
      select count(*)::int as plants from deleted`),
  )
  await tx.execute(
    sql`update ${ownerKeys} set erasing = true where ${ownerKeys.pseudonym} = ${key.pseudonym}`,
  )
  await tx.execute(sql`delete from ${ownerGenerations} where ${ownerGenerations.owner} = ${owner}`)
  await tx.execute(sql`
    insert into ${events} (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
    values (${`owner:${key.pseudonym}`}, 1, 'OwnerErased', 1, '{}'::jsonb,
            jsonb_build_object('pseudonym', ${key.pseudonym}::text), ${at.toISOString()}::timestamptz)`)
  return { pseudonym: key.pseudonym, plants: Number(counted?.plants ?? 0) }
}

// The erasures of `owner` that have begun and not completed, oldest first.
export async function pendingErasures(db: Executor, owner: string): Promise<PendingErasure[]> {
  const rows = rowsOf<{ pseudonym: string; notice: string }>(
    await db.execute(sql`
      select k.pseudonym, e.position::text as notice
      from ${ownerKeys} as k
      join ${events} as e on e.stream_id = 'owner:' || k.pseudonym and e.stream_version = 1
      where k.owner = ${owner} and k.erasing
      order by e.position`),
  )
  return rows.map((row) => ({ pseudonym: row.pseudonym, notice: BigInt(row.notice) }))
}

// The plants an erasure begun by an earlier run deleted: one PlantCreated each in the log, under the
// pseudonym (a scan of the log: only a rerun after a crash asks).
async function plantsOf(db: Executor, pseudonym: string): Promise<number> {
  const [row] = rowsOf<{ plants: number }>(
    await db.execute(sql`select count(*)::int as plants from ${events}
      where ${events.type} = 'PlantCreated' and ${events.metadata}->>'pseudonym' = ${pseudonym}`),
  )
  return Number(row?.plants ?? 0)
}

// Step 4: the key goes, and with it every readable trace of the owner in the log.
async function completeErasure(db: Database, pseudonym: string, at: Date): Promise<void> {
  await db.transaction(async (tx) => {
    await tx.execute(sql`delete from ${ownerKeys} where ${ownerKeys.pseudonym} = ${pseudonym} and erasing`)
    await tx
      .insert(erasedOwners)
      .values({ pseudonym, erasedAt: at })
      .onConflictDoNothing({ target: erasedOwners.pseudonym })
  })
}

// ANALYZE samples live rows only: after it, no statistic of these tables holds the erased owner.
async function refreshStatistics(db: Database): Promise<void> {
  for (const table of [plants, ownerKeys, ownerGenerations]) await db.execute(sql`analyze ${table}`)
}
