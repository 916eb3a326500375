import { type SQL, sql } from 'drizzle-orm'
import { pseudonymOf } from '../store/erasable.ts'
import { ownerKeys } from '../store/schema.ts'

// Whether the feed publishes `event` (a row of the events table), by the rule its readers apply
// (store/event-log.ts, cloud-event.ts): a PlantCreated while its owner's key is live, an
// OwnerErased while its erasure is in progress (the key, which names the owner, still there).
// The others never will be: counting them as lag would show a feed behind for good.
export function isPublishable(event: SQL): SQL {
  return sql`exists (select 1 from ${ownerKeys} as k where k.pseudonym = ${pseudonymOf(event)}
    and (not k.erasing or ${event}.type <> 'PlantCreated'))`
}
