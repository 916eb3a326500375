import { Buffer } from 'node:buffer'
import { and, inArray, not } from 'drizzle-orm'
import type { Keyring, OwnerKey } from '../keys/keyring.ts'
import type { Executor } from '../store/database.ts'
import { ownerKeys } from './schema.ts'

// An owner's key for an append: found in the database, or made here (`made`: the wrapped key the
// append stores, if no other writer stored one first).
export type AppendKey = OwnerKey & { made?: Uint8Array }

// Where creates find their owners' keys: owners' pseudonyms and wrapped keys kept in the process
// (a bounded number, the least recently used dropped first), so that a create of a known owner
// asks the database nothing before its append. What is kept may be stale (an erasure on another
// instance): the append checks the key is still live under the owner's lock and, when it is not,
// the owner is dropped here and found again.
export type OwnerKeyCache = {
  keyring: Keyring
  find: (db: Executor, owners: string[]) => Promise<Map<string, AppendKey>>
  // The key an append stored or used: kept for the owner's next creates.
  keep: (owner: string, key: { pseudonym: string }, wrapped: Uint8Array) => void
  // The owner's key `pseudonym` turned out not to be live: forgotten, unless a newer one is kept.
  drop: (owner: string, pseudonym: string) => void
}

const DEFAULT_CAPACITY = 10_000

export function ownerKeyCache(keyring: Keyring, { capacity = DEFAULT_CAPACITY } = {}): OwnerKeyCache {
  const known = new Map<string, { pseudonym: string; wrapped: Uint8Array }>()

  const keep = (owner: string, { pseudonym }: { pseudonym: string }, wrapped: Uint8Array) => {
    known.delete(owner)
    known.set(owner, { pseudonym, wrapped })
    if (known.size > capacity) known.delete(known.keys().next().value as string)
  }

  const find = async (db: Executor, owners: string[]) => {
    const found = new Map<string, AppendKey>()
    const missing: string[] = []
    for (const owner of new Set(owners)) {
      const stored = known.get(owner)
      if (stored) found.set(owner, { pseudonym: stored.pseudonym, raw: keyring.open(stored) })
      else missing.push(owner)
    }
    if (missing.length === 0) return found
    const rows = await db
      .select({ pseudonym: ownerKeys.pseudonym, owner: ownerKeys.owner, key: ownerKeys.key })
      .from(ownerKeys)
      .where(and(inArray(ownerKeys.owner, missing), not(ownerKeys.erasing)))
    for (const row of rows) {
      const wrapped = new Uint8Array(Buffer.from(row.key))
      found.set(row.owner, {
        pseudonym: row.pseudonym,
        raw: keyring.open({ pseudonym: row.pseudonym, wrapped }),
      })
      keep(row.owner, row, wrapped)
    }
    for (const owner of missing) {
      if (found.has(owner)) continue
      const { wrapped, ...key } = keyring.make()
      found.set(owner, { ...key, made: wrapped })
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
