import { Buffer } from 'node:buffer'
import { sql } from 'drizzle-orm'
import type { Keyring, StoredKey } from '../crypto/keyring.ts'
import { seal, streamIdOf } from '../crypto/sealing.ts'
import { type Database, rowsOf, type Transaction } from '../database/database.ts'
import { readStoredPlant } from '../domain/plant.ts'
import { parseEventData } from '../event-log/event-data.ts'
import { events, ownerKeys } from '../event-log/schema.ts'

type PlainEvent = {
  position: string
  stream_version: number
  type: string
  schema_version: number
  data: string
  owner: string | null
  request_id: string | null
}

// Seals the next `size` plaintext events after position `after`, in one transaction, in the
// service: each owner's key found or made (the subject was metadata.owner; a made key is wrapped
// under the first key-encryption key, as a create makes one), the stream id computed from the
// plant id (as upcast: v0 named it plantId), the data sealed as stored (a v0 event stays v0 inside)
// and the request id sealed in the metadata beside the pseudonym. The append-only trigger is off
// only inside this transaction: ALTER TABLE is transactional, so no other session ever sees it
// off. Undefined when none is left.
export async function sealPlaintextBatch(
  db: Database,
  keyring: Keyring,
  after: bigint,
  size: number,
): Promise<{ sealed: number; last: bigint } | undefined> {
  return db.transaction(async (tx) => {
    const batch = rowsOf<PlainEvent>(
      await tx.execute(sql`
        select position::text as position, stream_version, type, schema_version, data::text as data,
               metadata->>'owner' as owner, metadata->>'requestId' as request_id
        from ${events}
        where position > ${after.toString()}::bigint and not (metadata ? 'pseudonym')
        order by ${events}.position limit ${size}`),
    )
    const last = batch.at(-1)
    if (!last) return undefined
    // Only now: a transaction that found nothing to seal commits without touching the trigger.
    await tx.execute(sql`alter table ${events} disable trigger events_no_update_or_delete`)
    const keys = await ownersKeys(tx, keyring, batch)
    const sealed = batch.map((event) => {
      const key = event.owner === null ? undefined : keys.get(event.owner)
      if (!key) {
        throw new Error(
          `the log upgrade found an event without an owner after position ${after}: nothing sealed`,
        )
      }
      const plant = readStoredPlant(event.type, event.schema_version, parseEventData(event.data))
      if (typeof plant === 'string') {
        throw new Error(
          `malformed event ${event.type} v${event.schema_version} at position ${event.position}: ${plant}`,
        )
      }
      const raw = keyring.open(key)
      const place = { streamId: streamIdOf(plant.id, raw), streamVersion: event.stream_version }
      return {
        position: event.position,
        stream_id: place.streamId,
        data: seal(event.data, raw, 'data', place),
        metadata: {
          pseudonym: key.pseudonym,
          ...seal(JSON.stringify({ requestId: event.request_id }), raw, 'metadata', place),
        },
      }
    })
    await tx.execute(sql`alter table ${events} disable trigger events_no_update_or_delete`)
    await tx.execute(sql`
      update ${events} as e set stream_id = x.stream_id, data = x.data, metadata = x.metadata
      from json_to_recordset(${JSON.stringify(sealed)}::json)
        as x(position bigint, stream_id text, data jsonb, metadata jsonb)
      where e.position = x.position`)
    await tx.execute(sql`alter table ${events} enable trigger events_no_update_or_delete`)
    return { sealed: sealed.length, last: BigInt(last.position) }
  })
}

// The live key of each owner of `batch`, wrapped, found, or made and stored when they have none.
async function ownersKeys(
  tx: Transaction,
  keyring: Keyring,
  batch: PlainEvent[],
): Promise<Map<string, StoredKey>> {
  const owners = [...new Set(batch.flatMap((event) => (event.owner === null ? [] : [event.owner])))]
  const stored = () =>
    tx.execute(sql`
      select pseudonym, owner, encode(key, 'base64') as key from ${ownerKeys}
      where not erasing and owner in (select jsonb_array_elements_text(${JSON.stringify(owners)}::jsonb))`)
  const keys = new Map<string, StoredKey>()
  const take = (rows: { pseudonym: string; owner: string; key: string }[]) => {
    for (const row of rows) {
      keys.set(row.owner, { pseudonym: row.pseudonym, wrapped: Buffer.from(row.key, 'base64') })
    }
  }
  take(rowsOf(await stored()))
  const made = owners
    .filter((owner) => !keys.has(owner))
    .map((owner) => {
      const { pseudonym, wrapped } = keyring.make()
      return { pseudonym, owner, key: Buffer.from(wrapped).toString('base64') }
    })
  if (made.length > 0) {
    await tx.execute(sql`
      insert into ${ownerKeys} (pseudonym, owner, key)
      select pseudonym, owner, decode(key, 'base64')
      from json_to_recordset(${JSON.stringify(made)}::json) as r(pseudonym text, owner text, key text)
      on conflict (owner) where not erasing do nothing`)
    take(rowsOf(await stored()))
  }
  return keys
}
