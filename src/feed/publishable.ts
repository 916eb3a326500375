import { type SQL, sql } from 'drizzle-orm'
import { readersKeyOf } from '../event-log/pseudonyms.ts'

// Whether the feed publishes `event` (a row of the events table), by the rule its readers apply
// (event-log/pseudonyms.ts readersKeyOf, as event-log/reading.ts reads events, and cloud-event.ts): a
// PlantCreated while its owner's key is live, an OwnerErased while its erasure is in progress (the
// key, which names the owner, still there).
// The others never will be: counting them as lag would show a feed behind for good.
export function isPublishable(event: SQL): SQL {
  return sql`exists (${readersKeyOf(event)})`
}
