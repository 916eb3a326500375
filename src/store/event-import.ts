import { sql } from 'drizzle-orm'
import type { Transaction } from './database.ts'
import { events } from './schema.ts'

// Appends events given as a JSON array of exported lines (see replay/export-events.ts). PostgreSQL
// parses the JSON itself, so data keeps every digit and character exactly as exported.
// `keepPositions` is for an empty store: the events keep their global positions (and paging
// cursors stay valid). Otherwise they get new positions after the head, in the order given.
export async function appendExported(tx: Transaction, jsonArray: string, keepPositions: boolean) {
  const position = keepPositions
    ? sql`(e->>'position')::bigint`
    : sql`nextval(pg_get_serial_sequence('events', 'position'))`
  await tx.execute(sql`
    insert into events (position, stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
    select ${position}, e->>'streamId', (e->>'streamVersion')::int, e->>'type', (e->>'schemaVersion')::int,
           e->'data', e->'metadata', (e->>'recordedAt')::timestamptz
    from (select e from jsonb_array_elements(${jsonArray}::jsonb) with ordinality as lines(e, n) order by n) ordered`)
}

// After events were inserted with their own positions, new appends must start above them.
export async function advancePositionSequence(tx: Transaction): Promise<void> {
  await tx.execute(
    sql`select setval(pg_get_serial_sequence('events', 'position'), max(position)) from events having count(*) > 0`,
  )
}

export async function isLogEmpty(tx: Transaction): Promise<boolean> {
  const found = await tx.select({ position: events.position }).from(events).limit(1)
  return found.length === 0
}
