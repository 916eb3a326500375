import type postgres from 'postgres'
import { createKeyring, type Keyring } from '../../src/crypto/keyring.ts'
import { seedSealed } from '../support/sealed-seed.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

// Set-based seeding: events, sealed as the service writes them, and their plants rows in one
// statement each batch, consistent with each other (the plants row of every event carries its
// position), as the projection would fold them.
// `owner` is a SQL expression over the series value `i`.
export async function seedEvents(
  sql: postgres.Sql,
  keyring: Keyring,
  from: number,
  to: number,
  owner: string,
): Promise<void> {
  const BATCH = 250_000
  for (let start = from; start <= to; start += BATCH) {
    const end = Math.min(to, start + BATCH - 1)
    await seedSealed(
      sql,
      keyring,
      `select ${owner} as owner, i as id, 'plant ' || i as name, 'seed' as tag
       from generate_series(${start}::bigint, ${end}::bigint) as i`,
      { project: true },
    )
  }
  // The projection's checkpoint, where the schema has one, follows the seeded rows.
  await sql.unsafe(`
    do $$ begin
      if to_regclass('projection_checkpoints') is not null then
        insert into projection_checkpoints (projection, position)
        select 'plants', coalesce(max(position), 0) from plants
        on conflict (projection) do update set position = excluded.position;
      end if;
    end $$`)
  await sql.unsafe('vacuum analyze events')
  await sql.unsafe('vacuum analyze plants')
}

export async function countEvents(sql: postgres.Sql): Promise<number> {
  const [row] = await sql.unsafe('select count(*)::int as n from events')
  return Number(row?.n ?? 0)
}

// seedEvents under the test keys, which the benches' services run with.
export function seedTestEvents(sql: postgres.Sql, from: number, to: number, owner: string): Promise<void> {
  return seedEvents(sql, createKeyring(TEST_KEYS), from, to, owner)
}
