import { type SQL, sql } from 'drizzle-orm'

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
// what the live path never writes: an older shape of the data, or a transaction held open.
// Finds or makes the owner's key in the same statement.
export function sealedEventInsert({
  owner,
  plantId,
  type = 'PlantCreated',
  schemaVersion,
  data,
  recordedAt,
}: RawEvent): SQL {
  return sql`
    with made as (
      insert into owner_keys (pseudonym, owner, key)
      values (encode(gen_random_bytes(16), 'hex'), ${owner}, plant_store_wrap(gen_random_bytes(32)))
      on conflict (owner) where not erasing do update set owner = excluded.owner
      returning pseudonym, plant_store_unwrap(key) as key)
    insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
    select plant_store_stream_id(${plantId}, key), 1, ${type}, ${schemaVersion},
           jsonb_build_object('sealed', plant_store_seal(${data}, key)),
           jsonb_build_object('pseudonym', pseudonym,
             'sealed', plant_store_seal(jsonb_build_object('requestId', 'by-hand')::text, key)),
           ${recordedAt}::timestamptz
    from made`
}
