import { Buffer } from 'node:buffer'
import { and, inArray, not } from 'drizzle-orm'
import type { Keyring, StoredKey } from '../crypto/keyring.ts'
import type { Executor } from '../database/database.ts'
import { ownerKeys } from './schema.ts'

// An owner's key for an append, wrapped: found in the database, or made here (`made`: the append
// stores it, if no other writer stored one first). The raw key is opened from the keyring where it
// is used, at once (crypto/keyring.ts).
export type AppendKey = StoredKey & { made?: true }

// Where creates find their owners' keys: owners' pseudonyms and wrapped keys kept in the process
// (a bounded number, the least recently used dropped first), so that a create of a known owner
// asks the database nothing before its append. What is kept may be stale (an erasure on another
// instance): the append checks the key is still live under the owner's lock and, when it is not,
// the owner is dropped here and found again.
export type OwnerKeyCache = {
  keyring: Keyring
  find: (db: Executor, owners: string[]) => Promise<Map<string, AppendKey>>
  // The key an append stored or used: kept for the owner's next creates.
  keep: (owner: string, key: StoredKey) => void
  // The owner's key `pseudonym` turned out not to be live: forgotten, unless a newer one is kept.
  drop: (owner: string, pseudonym: string) => void
}

const DEFAULT_CAPACITY = 10_000

export function ownerKeyCache(keyring: Keyring, { capacity = DEFAULT_CAPACITY } = {}): OwnerKeyCache {
  const known = new Map<string, StoredKey>()

  const keep = (owner: string, { pseudonym, wrapped }: StoredKey) => {
    known.delete(owner)
    known.set(owner, { pseudonym, wrapped })
    if (known.size > capacity) known.delete(known.keys().next().value as string)
  }

  const find = async (db: Executor, owners: string[]) => {
    const found = new Map<string, AppendKey>()
    const missing: string[] = []
    for (const owner of new Set(owners)) {
      const stored = known.get(owner)
      if (stored) found.set(owner, stored)
      else missing.push(owner)
    }
    if (missing.length === 0) return found
    const rows = await db
      .select({ pseudonym: ownerKeys.pseudonym, owner: ownerKeys.owner, key: ownerKeys.key })
      .from(ownerKeys)
      .where(and(inArray(ownerKeys.owner, missing), not(ownerKeys.erasing)))
    for (const row of rows) {
      const stored = { pseudonym: row.pseudonym, wrapped: new Uint8Array(Buffer.from(row.key)) }
      found.set(row.owner, stored)
      keep(row.owner, stored)
    }
    for (const owner of missing) {
      if (found.has(owner)) continue
      const { pseudonym, wrapped } = keyring.make()
      found.set(owner, { pseudonym, wrapped, made: true })
    }
    return found
  }

  return {
    keyring,
    find,
    keep,
    drop: (owner, pseudonym) => {
      keyring.forget(pseudonym)
      if (known.get(owner)?.pseudonym === pseudonym) known.delete(owner)
    },
  }
}
