import { sql } from 'drizzle-orm'
import { type Executor, rowsOf } from '../database/database.ts'
import { erasedOwners, events, ownerKeys } from '../event-log/schema.ts'

// What an export carries beside the events (transfer/export-format.ts), read a page at a time, in
// pseudonym order, in the export's snapshot.

// The keys not being erased: pseudonym, owner (the token's sub) and key in base64.
export async function readLiveKeys(
  db: Executor,
  after: string,
  batchSize: number,
): Promise<[string, string, string][]> {
  // The owner as JSON text: a driver that decodes values with a default TextDecoder (PGlite's, when
  // a store of that engine is moved) would drop a U+FEFF at the start of a bare value.
  const rows = rowsOf<{ pseudonym: string; owner: string; key: string }>(
    await db.execute(sql`
      select ${ownerKeys.pseudonym} as pseudonym, to_json(${ownerKeys.owner})::text as owner,
             translate(encode(${ownerKeys.key}, 'base64'), E'\n', '') as key
      from ${ownerKeys}
      where not ${ownerKeys.erasing} and ${ownerKeys.pseudonym} > ${after}
      order by ${ownerKeys.pseudonym} limit ${batchSize}`),
  )
  return rows.map((row) => [row.pseudonym, JSON.parse(row.owner) as string, row.key])
}

// The ids (hex) of the key-encryption keys the exported keys are wrapped under: what a restore of
// the file needs (envelope.ts: a wrapped key names its KEK by its first 4 bytes).
export async function readWrappingKeyIds(db: Executor): Promise<string[]> {
  const rows = rowsOf<{ id: string }>(
    await db.execute(sql`
      select distinct encode(substr(${ownerKeys.key}, 1, 4), 'hex') as id from ${ownerKeys}
      where not ${ownerKeys.erasing} order by 1`),
  )
  return rows.map((row) => row.id)
}

// The erased pseudonyms, and those whose erasure has begun (their owner is hidden already: an
// export must not bring them back), with when: the erasure's end, else its notice's time.
export async function readErasedPseudonyms(
  db: Executor,
  after: string,
  batchSize: number,
): Promise<[string, string][]> {
  const utc = (time: ReturnType<typeof sql>) =>
    sql`to_char(${time} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`
  const rows = rowsOf<{ pseudonym: string; erased_at: string }>(
    await db.execute(sql`
      select pseudonym, ${utc(sql`erased_at`)} as erased_at from (
        select ${erasedOwners.pseudonym} as pseudonym, ${erasedOwners.erasedAt} as erased_at from ${erasedOwners}
        union all
        select k.pseudonym, coalesce((select e.recorded_at from ${events} as e
                                      where e.stream_id = 'owner:' || k.pseudonym and e.stream_version = 1),
                                     statement_timestamp())
        from ${ownerKeys} as k where k.erasing) as erased
      where pseudonym > ${after}
      order by pseudonym limit ${batchSize}`),
  )
  return rows.map((row) => [row.pseudonym, row.erased_at])
}
