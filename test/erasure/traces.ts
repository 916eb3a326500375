import { sql } from 'drizzle-orm'
import { type Executor, rowsOf } from '../../src/database/database.ts'

// Where any of `needles` can still be read in the store: every live row of every table of the
// service's schema, and PostgreSQL's statistics of them (pg_stats), each row as text. Returns
// "table: needle" for each find; [] when nothing is left (docs/erasure.md).
export async function findTraces(db: Executor, needles: string[]): Promise<string[]> {
  const tables = rowsOf<{ name: string }>(
    await db.execute(sql`select c.relname as name from pg_class c join pg_namespace n on n.oid = c.relnamespace
                         where n.nspname = current_schema() and c.relkind in ('r', 'p', 'm')`),
  ).map((row) => row.name)
  const sources = [
    ...tables.map((name) => ({ name, rows: sql`select t::text as text from ${sql.identifier(name)} as t` })),
    {
      name: 'pg_stats',
      rows: sql`select row_to_json(s)::text as text from pg_stats as s where s.schemaname = current_schema()`,
    },
  ]
  const found: string[] = []
  for (const { name, rows } of sources) {
    const texts = rowsOf<{ text: string }>(await db.execute(rows)).map((row) => row.text)
    for (const needle of needles)
      if (texts.some((text) => text.includes(needle))) found.push(`${name}: ${needle}`)
  }
  return found
}
