import { type SQL, sql } from 'drizzle-orm'
import { ownerKeys } from './schema.ts'

// The erasable form of the log (docs/erasure.md). Each owner has a random pseudonym and a random key
// (owner_keys); an event names its owner by the pseudonym and keeps the plant's data and the
// request id sealed under the key (AES-256-CBC, migration 0006), its stream id an HMAC of the plant
// id under the key. Erasing an owner deletes the key: their events stay, unreadable for good.
// Everything is sealed and opened by the database, where the keys are: no key travels to a process.
// A key is stored wrapped under a key-encryption key the database does not store (migration 0008,
// docs/keys.md): these fragments hand on keys unwrapped, and only these and `unwrappedKey` unwrap.

// The key stored as `wrapped`, unwrapped with the key-encryption keys this session was given.
export function unwrappedKey(wrapped: SQL): SQL {
  return sql`plant_store_unwrap(${wrapped})`
}

// A new owner's key, random, as stored: wrapped under the first key-encryption key.
export const newWrappedKey = sql`plant_store_wrap(gen_random_bytes(32))`

// The keys of the owners that can be read: not those being erased.
export const liveKeys = sql`(select ${ownerKeys.pseudonym} as pseudonym, ${ownerKeys.owner} as owner, ${unwrappedKey(sql`${ownerKeys.key}`)} as key
  from ${ownerKeys} where not ${ownerKeys.erasing})`

// An event's pseudonym, `event` being a row shaped like the events table.
export function pseudonymOf(event: SQL): SQL {
  return sql`${event}.metadata->>'pseudonym'`
}

// The data of `event` as it was written, opened with `key` (null when the key is null).
export function openedData(event: SQL, key: SQL): SQL {
  return sql`plant_store_open(${event}.data, ${key})`
}

// The pseudonym of `owner` (a token's subject) while they can be read; null otherwise.
export function currentPseudonym(owner: SQL): SQL {
  return sql`(select ${ownerKeys.pseudonym} from ${ownerKeys} where ${ownerKeys.owner} = ${owner} and not ${ownerKeys.erasing})`
}

// The key of `event`'s owner as the log's readers (the feed, the change streams) may use it, as a
// query of pseudonym, owner and key: a PlantCreated's while its owner is not being erased, an
// OwnerErased's while its erasure runs (the key still names the owner).
export function readersKeyOf(event: SQL): SQL {
  return sql`select ${ownerKeys.pseudonym} as pseudonym, ${ownerKeys.owner} as owner, ${unwrappedKey(sql`${ownerKeys.key}`)} as key
    from ${ownerKeys}
    where ${ownerKeys.pseudonym} = ${pseudonymOf(event)} and (not ${ownerKeys.erasing} or ${event}.type <> 'PlantCreated')`
}
