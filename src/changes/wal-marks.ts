import { sql } from 'drizzle-orm'
import { type Executor, rowsOf } from '../database/database.ts'

// A follower position and where the primary's WAL stood once the follower had settled it: every
// commit of an event up to `position` lies at or below `lsn`.
export type WalMark = { position: bigint; lsn: string }

export type WalMarksDeps = {
  primary: Executor
  // The follower's position now: everything up to it is committed and handed out.
  position: () => bigint
}

// A commit shows to other sessions once its record is flushed, unless synchronous_commit is off:
// then it shows as soon as the record is inserted. The creates share this pool's settings.
const markStatement = sql`
  select (case when current_setting('synchronous_commit') = 'off' then pg_current_wal_insert_lsn()
               else pg_current_wal_flush_lsn() end)::text as lsn`

// Marks of the follower's position, for reads that must show everything up to it (a replica's
// catch-up). The WAL position is read after the follower settled the position, so it lies past
// the commits the follower saw. One read of the primary serves every stream that asks meanwhile:
// while the follower stands still, none; while it moves, at most one in flight.
export function followWalMarks({ primary, position }: WalMarksDeps) {
  let latest: WalMark | undefined
  let reading: { position: bigint; mark: Promise<WalMark> } | undefined

  const read = (at: bigint) => {
    const mark = primary.execute(markStatement).then((result) => {
      const [row] = rowsOf<{ lsn: string }>(result)
      if (!row) throw new Error('the primary did not say where its WAL stands')
      const read = { position: at, lsn: row.lsn }
      if (latest === undefined || read.position > latest.position) latest = read
      return read
    })
    const current = { position: at, mark }
    reading = current
    const done = () => {
      if (reading === current) reading = undefined
    }
    mark.then(done, done)
    return mark
  }

  // A mark at or past `at`, a position the follower has already reached.
  const atLeast = async (at: bigint): Promise<WalMark> => {
    if (latest !== undefined && latest.position >= at) return latest
    if (reading !== undefined && reading.position >= at) return reading.mark
    return read(position())
  }

  return { atLeast }
}

export type WalMarks = ReturnType<typeof followWalMarks>

// Whether `db` (a replica) has replayed the primary's WAL up to `lsn`. A statement's snapshot is
// taken before its functions run, so this is asked in a statement of its own, before the read it
// vouches for, in the same transaction: that read's snapshot then shows everything replayed.
export async function hasReplayed(db: Executor, lsn: string): Promise<boolean> {
  const [row] = rowsOf<{ replayed: boolean | null }>(
    await db.execute(sql`select pg_last_wal_replay_lsn() >= ${lsn}::pg_lsn as replayed`),
  )
  return row?.replayed === true
}
