import { type SQL, sql } from 'drizzle-orm'
import { ownerKeys } from './schema.ts'

// The erasable form of the log, as the database sees it (docs/erasure.md). Each owner has a random
// pseudonym and a random key (owner_keys), stored wrapped under a key-encryption key only the
// service holds; an event names its owner by the pseudonym, and its data and request id are
// sealed under the key by the service (crypto/sealing.ts). These fragments find the wrapped keys;
// the database never sees a key it could use.

// The owners that can be read: not those being erased.
export const liveKeys = sql`(select ${ownerKeys.pseudonym} as pseudonym, ${ownerKeys.owner} as owner
  from ${ownerKeys} where not ${ownerKeys.erasing})`

// An event's pseudonym, `event` being a row shaped like the events table.
export function pseudonymOf(event: SQL): SQL {
  return sql`${event}.metadata->>'pseudonym'`
}

// The pseudonym of `owner` (a token's subject) while they can be read; null otherwise.
export function currentPseudonym(owner: SQL): SQL {
  return sql`(select ${ownerKeys.pseudonym} from ${ownerKeys} where ${ownerKeys.owner} = ${owner} and not ${ownerKeys.erasing})`
}

// The key of `event`'s owner as the log's readers (the feed, the change streams) may use it, as a
// query of pseudonym, owner and wrapped key: a PlantCreated's while its owner is not being erased,
// an OwnerErased's while its erasure runs (the key still names the owner).
export function readersKeyOf(event: SQL): SQL {
  return sql`select ${ownerKeys.pseudonym} as pseudonym, ${ownerKeys.owner} as owner, ${ownerKeys.key} as key
    from ${ownerKeys}
    where ${ownerKeys.pseudonym} = ${pseudonymOf(event)} and (not ${ownerKeys.erasing} or ${event}.type <> 'PlantCreated')`
}
