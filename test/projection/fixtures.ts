import { and, eq, not, sql } from 'drizzle-orm'
import { openSealed, seal, streamIdOf } from '../../src/crypto/sealing.ts'
import type { Database } from '../../src/database/database.ts'
import { events, ownerKeys } from '../../src/event-log/schema.ts'
import { create, type KeyedStore, listing } from '../support/storage.ts'

// Plants that stress exactness: ids beyond 2^53 and at the int64 edges, text well outside
// ASCII (astral characters, combining marks, line separators, quotes and backslashes), and the
// three ways to have, or not have, a tag.
export const TRICKY_PLANTS: Record<string, { id: bigint; name: string; tag?: string | null }[]> = {
  alice: [
    { id: 9007199254740993n, name: 'Ficus' },
    { id: 9007199254740992n, name: 'Ficus twin', tag: null },
    { id: 9223372036854775807n, name: 'Max', tag: '' },
    { id: -9223372036854775808n, name: 'Min', tag: 'edge' },
  ],
  'bob 🌵 "b"': [
    { id: 7n, name: 'Kaktus 🌵 é 你好 😀', tag: 'ת"ג\\' },
    { id: 8n, name: '\u2028line\u2029sep', tag: '\t' },
  ],
}

export const TRICKY_PLANT_COUNT = Object.values(TRICKY_PLANTS).flat().length

export async function createTrickyPlants(store: KeyedStore): Promise<void> {
  for (const [owner, plants] of Object.entries(TRICKY_PLANTS)) {
    for (const plant of plants) await create(store, owner, plant)
  }
}

export async function listingsByOwner(db: Database): Promise<Record<string, unknown>> {
  const listings: Record<string, unknown> = {}
  for (const owner of Object.keys(TRICKY_PLANTS)) listings[owner] = await listing(db, owner)
  return listings
}

// An event written by hand in the log's erasable form, sealed in the service as the upgrade of a
// previous version's log seals one: `data` is the text sealed as stored (a v0 event stays v0
// inside). The owner's key is made unless they have one.
export async function appendSealedText(
  { db, keyring }: KeyedStore,
  owner: string,
  event: { plantId: string; schemaVersion: number; data: string; recordedAt: string },
): Promise<void> {
  const [stored] = await db
    .select({ pseudonym: ownerKeys.pseudonym, key: ownerKeys.key })
    .from(ownerKeys)
    .where(and(eq(ownerKeys.owner, owner), not(ownerKeys.erasing)))
  const key = stored
    ? { pseudonym: stored.pseudonym, raw: keyring.open({ pseudonym: stored.pseudonym, wrapped: stored.key }) }
    : keyring.make()
  // Used after the inserts below: a copy of our own, the keyring's being zeroed once idle.
  const raw = new Uint8Array(key.raw)
  if (!stored && 'wrapped' in key) {
    await db.insert(ownerKeys).values({ pseudonym: key.pseudonym, owner, key: key.wrapped })
  }
  const place = { streamId: streamIdOf(event.plantId, raw), streamVersion: 1 }
  await db.insert(events).values({
    ...place,
    type: 'PlantCreated',
    schemaVersion: event.schemaVersion,
    data: seal(event.data, raw, 'data', place),
    metadata: { pseudonym: key.pseudonym, ...seal('{"requestId":"r"}', raw, 'metadata', place) },
    recordedAt: new Date(event.recordedAt),
  })
}

// The sealed data text of the events of `schemaVersion`, opened with their owners' live keys.
export async function openedTexts({ db, keyring }: KeyedStore, schemaVersion: number): Promise<string[]> {
  const rows = await db
    .select({
      data: events.data,
      streamId: events.streamId,
      streamVersion: events.streamVersion,
      pseudonym: ownerKeys.pseudonym,
      key: ownerKeys.key,
    })
    .from(events)
    .innerJoin(ownerKeys, sql`${ownerKeys.pseudonym} = ${events.metadata}->>'pseudonym'`)
    .where(eq(events.schemaVersion, schemaVersion))
    .orderBy(events.position)
  return rows.map(
    (row) =>
      openSealed(row.data, keyring.open({ pseudonym: row.pseudonym, wrapped: row.key }), 'data', row)?.text ??
      '',
  )
}
