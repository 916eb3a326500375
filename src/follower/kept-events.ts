import { sql } from 'drizzle-orm'
import { type Executor, preparedQuery } from '../database/database.ts'
import { readersKeyOf } from '../event-log/pseudonyms.ts'
import type { LoggedEvent } from '../event-log/reading.ts'

// The owner each (type, pseudonym) has now by the readers' rule, one probe of the key each: the
// rows are handed over as one JSON array, shaped as the rule reads an event.
const ownersNow = preparedQuery((db) => {
  const asked = db
    .$with('asked', {
      type: sql<string>`type`.as('type'),
      pseudonym: sql<string>`pseudonym`.as('pseudonym'),
      owner: sql<string | null>`owner`.as('owner'),
    })
    .as(sql`
      select e.type, e.metadata->>'pseudonym' as pseudonym, k.owner
      from jsonb_to_recordset(${sql.placeholder('events')}::jsonb) as e(type text, metadata jsonb)
      left join lateral (${readersKeyOf(sql`e`)}) as k on true`)
  return db.with(asked).select().from(asked).prepare('kept_events_owners')
})

// Events read from the log a while ago, as a read of the log would give them now (docs/erasure.md:
// nothing opened is reused past its owner's erasure): an erased owner's PlantCreated is left out,
// and an OwnerErased whose erasure has completed names no one, by the rule every read of the log
// applies (event-log/pseudonyms.ts readersKeyOf). Only the keys are read again, not the events.
export async function asReadNow(db: Executor, events: LoggedEvent[]): Promise<LoggedEvent[]> {
  if (events.length === 0) return events
  const asked = new Map<string, { type: string; metadata: { pseudonym: string } }>()
  for (const { type, metadata } of events) {
    asked.set(`${type} ${metadata.pseudonym}`, { type, metadata: { pseudonym: metadata.pseudonym } })
  }
  const rows = await ownersNow(db).execute({ events: JSON.stringify([...asked.values()]) })
  const owners = new Map(rows.map((row) => [`${row.type} ${row.pseudonym}`, row.owner]))
  return events.flatMap((event) => {
    const owner = owners.get(`${event.type} ${event.metadata.pseudonym}`) ?? null
    if (event.type === 'PlantCreated' && owner === null) return []
    if (owner === event.metadata.owner) return [event]
    return [{ ...event, metadata: { ...event.metadata, owner } }]
  })
}
