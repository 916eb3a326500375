import { sql } from 'drizzle-orm'
import type { Keyring } from '../../src/crypto/keyring.ts'
import { seal, streamIdOf } from '../../src/crypto/sealing.ts'
import type { Executor } from '../../src/database/database.ts'
import { type AppendKey, ownerKeyCache } from '../../src/event-log/owner-keys.ts'

export type RawEvent = {
  owner: string
  plantId: string
  type?: string
  schemaVersion: number
  // The event's data as written, JSON text: sealed under the owner's key here.
  data: string
  recordedAt: string
}

// An event written in the erasable form by hand (docs/erasure.md, as appendEvents writes it), for
// what the live path never writes: an older shape of the data, or a transaction held open. Finds
// or makes the owner's key, sealing here as the service does.
export async function insertSealedEvent(
  db: Executor,
  keyring: Keyring,
  { owner, plantId, type = 'PlantCreated', schemaVersion, data, recordedAt }: RawEvent,
): Promise<void> {
  const key = (await ownerKeyCache(keyring).find(db, [owner])).get(owner) as AppendKey
  if (key.made) {
    await db.execute(
      sql`insert into owner_keys (pseudonym, owner, key) values (${key.pseudonym}, ${owner}, ${key.wrapped})`,
    )
  }
  const raw = keyring.open(key)
  const place = { streamId: streamIdOf(plantId, raw), streamVersion: 1 }
  const metadata = {
    pseudonym: key.pseudonym,
    ...seal('{"requestId":"by-hand"}', raw, 'metadata', place),
  }
  await db.execute(sql`
    insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
    values (${place.streamId}, 1, ${type}, ${schemaVersion},
            ${JSON.stringify(seal(data, raw, 'data', place))}::jsonb, ${JSON.stringify(metadata)}::jsonb,
            ${recordedAt}::timestamptz)`)
}
