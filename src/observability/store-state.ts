import { sql } from 'drizzle-orm'
import { type Database, rowsOf } from '../store/database.ts'

export type StoreState = {
  headPosition: number
  projectedPosition: number
  // PostgreSQL connections of this application, by state (`active`, `idle`, …).
  connections: Record<string, number>
}

const READ_TIMEOUT_MS = 1000

// What the metrics show about the store, or undefined when the database does not answer in time.
// postgres.js does not expose its pool, so connections are counted by the server: those with this
// application's name on this database, less the one running this query.
export async function readStoreState(db: Database): Promise<StoreState | undefined> {
  const read = async (): Promise<StoreState> => {
    const positions = rowsOf<{ head: string | null; projected: string | null }>(
      await db.execute(sql`select
        (select max(position) from events)::text as head,
        (select max(position) from plants)::text as projected`),
    )[0]
    const activity = rowsOf<{ state: string | null; n: number }>(
      await db.execute(sql`select coalesce(state, 'unknown') as state, count(*)::int as n
        from pg_stat_activity
        where datname = current_database()
          and application_name = current_setting('application_name')
          and application_name <> ''
          and pid <> pg_backend_pid()
        group by 1`),
    )
    return {
      headPosition: Number(positions?.head ?? 0),
      projectedPosition: Number(positions?.projected ?? 0),
      connections: Object.fromEntries(activity.map((row) => [row.state ?? 'unknown', row.n])),
    }
  }
  let timer: ReturnType<typeof setTimeout> | undefined
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(resolve, READ_TIMEOUT_MS, undefined)
  })
  try {
    return await Promise.race([read().catch(() => undefined), timeout])
  } finally {
    clearTimeout(timer)
  }
}
