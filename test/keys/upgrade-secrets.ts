import { sql } from 'drizzle-orm'
import { type Database, type Executor, rowsOf } from '../../src/database/database.ts'
import type { PlantView } from '../../src/plants/schemas.ts'
import { incompressible } from '../erasure/fixtures/incompressible.ts'

// What a legacy store says about its owners in the clear, read before the upgrade, so that the
// upgraded store can be searched for it and its listings compared.
export type LegacyFacts = {
  owners: string[]
  listings: Map<string, PlantView[]>
  secrets: string[]
  positions: string[]
}

export async function readLegacyFacts(db: Executor): Promise<LegacyFacts> {
  const plants = rowsOf<{ owner: string; id: string; name: string; tag: string | null }>(
    await db.execute(sql`select owner, id::text as id, name, tag from plants order by owner, position`),
  )
  const events = rowsOf<{ owner: string; requestId: string; position: string }>(
    await db.execute(sql`select metadata->>'owner' as owner, metadata->>'requestId' as "requestId",
      position::text as position from events order by position`),
  )
  const listings = new Map<string, PlantView[]>()
  for (const { owner, name, tag } of plants) {
    listings.set(owner, [...(listings.get(owner) ?? []), tag === null ? { name } : { name, tag }])
  }
  const secrets = new Set<string>()
  for (const { owner, id, name, tag } of plants)
    for (const value of [owner, id, name, tag ?? '']) secrets.add(value)
  for (const { owner, requestId } of events) secrets.add(owner).add(requestId)
  secrets.delete('')
  return {
    owners: [...listings.keys()],
    listings,
    secrets: [...secrets],
    positions: events.map((event) => event.position),
  }
}

// The part of a secret that any rendering (JSON, array or record text) writes unchanged: the
// longest run without quotes, backslashes or control characters.
function searchable(secret: string): string {
  return secret
    .split(/["\\\p{Cc}]/u)
    .reduce((longest, piece) => (piece.length > longest.length ? piece : longest), '')
}

// The secrets found in the texts, each named by its first characters. A short one (`noah`) counts
// only where it stands apart, not inside a run of base64 or hex, where it may occur by chance.
export function secretsIn(texts: string[], secrets: string[]): string[] {
  return secrets
    .filter((secret) => {
      const piece = searchable(secret)
      if (piece.length >= 8) return texts.some((text) => text.includes(piece))
      const apart = new RegExp(
        `(?<![A-Za-z0-9+/])${piece.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}(?![A-Za-z0-9+/=])`,
        'u',
      )
      return texts.some((text) => apart.test(text))
    })
    .map((secret) => [...secret].slice(0, 24).join(''))
}

// Every row of the events table as text, all its columns.
export async function eventRowsText(db: Database): Promise<string[]> {
  const rows = rowsOf<{ text: string }>(
    await db.execute(sql`select concat_ws(' ', position, transaction_id, stream_id, stream_version, type,
      schema_version, data, metadata, recorded_at) as text from events`),
  )
  return rows.map((row) => row.text)
}

// Everything PostgreSQL's statistics keep of the events table's values.
export async function eventStatisticsText(db: Database): Promise<string[]> {
  const rows = rowsOf<{ text: string }>(
    await db.execute(sql`select concat_ws(' ', attname, most_common_vals, histogram_bounds, most_common_elems)
      as text from pg_stats where tablename = 'events'`),
  )
  return rows.map((row) => row.text)
}

// Texts of the fixture that its table's files hold as written: a request id and a name in a row,
// and the start of a name kept out of line (long values that compress are compressed: not these).
export const FILE_SAMPLES = ['fixture-olivia-max', 'Maximum monstera', incompressible(8, 0x4e00, 0x5200)]

// Which of `texts` the events table's files (its heap and its TOAST table: every row version they
// still hold, not only the live rows) contain. After a checkpoint, so that the files have what the
// buffers hold. The server reads its own files (pg_read_binary_file: a superuser's, as in the tests).
export async function inTableFiles(db: Database, texts: string[]): Promise<string[]> {
  await db.execute(sql`checkpoint`)
  const found: string[] = []
  for (const text of texts) {
    const [row] = rowsOf<{ found: boolean }>(
      await db.execute(sql`select bool_or(position(convert_to(${text}, 'UTF8') in pg_read_binary_file(pg_relation_filepath(oid))) > 0) as found
        from pg_class where oid in ('events'::regclass, (select reltoastrelid from pg_class where oid = 'events'::regclass))`),
    )
    if (row?.found) found.push(text)
  }
  return found
}
