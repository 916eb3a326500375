import { sql } from 'drizzle-orm'
import { Gauge, type Registry } from 'prom-client'
import { type Database, rowsOf } from '../database/database.ts'
import type { Logger } from '../shared/logger.ts'
import { repeatEvery } from '../shared/repeat.ts'

// The transaction that holds the log's readers back, as pg_stat_activity shows it.
export type HoldingBackend = {
  pid: number
  database: string | null
  state: string | null
  ageSeconds: number
}

export type ReadersHeldDeps = {
  db: Database
  registry: Registry
  logger: Logger
  checkEveryMs?: number
  // A hold this long is worth a warning; shorter ones are the ordinary creates in flight.
  warnAfterMs?: number
}

// The feed, the change streams and `events export` read only events of transactions older than
// every transaction still running on the whole server (event-log/reading.ts, `isSettled`): the horizon is
// the oldest transaction id in flight, in any database. A transaction left open (an idle session in
// a migration tool, a report in another database) holds them all, and nothing else says why.
// This check finds that transaction: its age is how long events committed since have waited, at
// most. Seeing other roles' sessions takes pg_read_all_stats (or pg_monitor); without it, the
// holder's database and state read null.
export function watchEventLogReadersHeld({
  db,
  registry,
  logger,
  checkEveryMs = 5000,
  warnAfterMs = 30_000,
}: ReadersHeldDeps) {
  const held = new Gauge({
    name: 'plant_store_log_readers_held_seconds',
    help: "Age of the oldest transaction running on the PostgreSQL server, which the log's readers (feed, change streams, export) cannot read past",
    registers: [registry],
  })
  // The holder already warned about: one warning per episode.
  let warned: string | undefined
  const check = async () => {
    const holder = await oldestTransaction(db)
    held.set(holder?.ageSeconds ?? 0)
    if (holder === undefined || holder.ageSeconds * 1000 < warnAfterMs) {
      if (warned !== undefined) logger.info({ holder: warned }, "the log's readers are no longer held")
      warned = undefined
      return
    }
    const key = `${holder.pid}:${holder.xid}`
    if (warned === key) return
    warned = key
    const { xid: _, ownDatabase, ...named } = holder
    logger.warn({ holder: named }, readersHeldWarning(named, ownDatabase))
  }
  return repeatEvery(checkEveryMs, check, (error) => logger.debug({ err: error }, 'log readers check failed'))
}

// What the warning asks depends on whose transaction it is: one in another database of a shared
// server belongs to someone else, whom the operator may have to ask, or move away from.
export function readersHeldWarning(holder: HoldingBackend, ownDatabase: string): string {
  const held = "a long transaction holds this service's log readers back (feed, change streams, export)"
  const why =
    "transaction ids are the server's, so the readers wait for the oldest transaction in any of its databases"
  if (holder.database === ownDatabase)
    return `${held}: it is in this service's own database; end it (pg_terminate_backend(${holder.pid}) if it is abandoned)`
  const where =
    holder.database === null
      ? 'in a database this role may not see (grant it pg_read_all_stats to know which)'
      : `in another database of this PostgreSQL server (${holder.database})`
  return `${held}: it is ${where}, and ${why}; its owner can end it, or the operator can give this service a PostgreSQL server of its own`
}

async function oldestTransaction(
  db: Database,
): Promise<(HoldingBackend & { xid: string; ownDatabase: string }) | undefined> {
  const [row] = rowsOf<{
    pid: number
    database: string | null
    state: string | null
    age: number
    xid: string
    own: string
  }>(
    await db.execute(sql`
      select pid, datname as database, state, backend_xid::text as xid, current_database() as own,
             extract(epoch from clock_timestamp() - coalesce(xact_start, backend_start))::float8 as age
      from pg_stat_activity
      where backend_xid is not null
      order by age(backend_xid) desc
      limit 1`),
  )
  if (row === undefined) return undefined
  const { pid, database, state, age, xid, own } = row
  return { pid, database, state, ageSeconds: age, xid, ownDatabase: own }
}
