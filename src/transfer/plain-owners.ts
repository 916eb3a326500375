import { Buffer } from 'node:buffer'
import { type SQL, sql } from 'drizzle-orm'
import type { Keyring } from '../crypto/keyring.ts'
import { seal, streamIdOf } from '../crypto/sealing.ts'
import { rowsOf, type Transaction } from '../database/database.ts'
import { ownerKeys } from '../event-log/schema.ts'

const BATCH = 5_000

// The owners of a version 1 (plaintext) export's events are named by their subject: under the
// append lock of an import, each is given its live key, found or made here (wrapped under the
// first key-encryption key, as a create makes one), and each event its pseudonym, its stream id
// under that key and its data and request id sealed, in the service, a batch at a time.
export async function sealPlainOwners(
  tx: Transaction,
  keyring: Keyring,
  table: ReturnType<typeof sql.identifier>,
): Promise<void> {
  const plain = (row: SQL | typeof table) => sql`${row}.kind = 'event' and not ${row}.sealed`
  for (;;) {
    const owners = rowsOf<{ owner: string }>(
      await tx.execute(sql`
        select distinct owner from ${table}
        where ${plain(table)} and not exists (
          select 1 from ${ownerKeys} as k where k.owner = ${table}.owner and not k.erasing)
        limit ${BATCH}`),
    )
    if (owners.length === 0) break
    const made = owners.map(({ owner }) => {
      const { pseudonym, wrapped } = keyring.make()
      return { pseudonym, owner, key: Buffer.from(wrapped).toString('base64') }
    })
    await tx.execute(sql`
      insert into ${ownerKeys} (pseudonym, owner, key)
      select pseudonym, owner, decode(key, 'base64')
      from json_to_recordset(${JSON.stringify(made)}::json) as r(pseudonym text, owner text, key text)`)
  }
  for (let after = 0; ; ) {
    const rows = rowsOf<PlainRow>(
      await tx.execute(sql`
        select s.line, s.plant_id::text as plant_id, s.stream_version, (s.event->'data')::text as data,
               s.event->'metadata'->>'requestId' as request_id, k.pseudonym, encode(k.key, 'base64') as key
        from ${table} as s join ${ownerKeys} as k on k.owner = s.owner and not k.erasing
        where ${plain(sql`s`)} and s.line > ${after}
        order by s.line limit ${BATCH}`),
    )
    const last = rows.at(-1)
    if (!last) return
    const sealed = rows.map(sealedLine(keyring))
    await tx.execute(sql`
      update ${table} as s
      set pseudonym = x.pseudonym, stream_id = x.stream_id,
          event = s.event || jsonb_build_object('data', x.data, 'metadata', x.metadata)
      from json_to_recordset(${JSON.stringify(sealed)}::json)
        as x(line int, pseudonym text, stream_id text, data jsonb, metadata jsonb)
      where s.line = x.line`)
    after = last.line
  }
}

type PlainRow = {
  line: number
  plant_id: string
  stream_version: number
  data: string
  request_id: string
  pseudonym: string
  key: string
}

// A plaintext event as the append statement seals one: its data as stored (a v0 event stays v0
// inside), its request id in the metadata beside the pseudonym.
function sealedLine(keyring: Keyring) {
  return (row: PlainRow) => {
    const raw = keyring.open({ pseudonym: row.pseudonym, wrapped: Buffer.from(row.key, 'base64') })
    const place = { streamId: streamIdOf(row.plant_id, raw), streamVersion: row.stream_version }
    return {
      line: row.line,
      pseudonym: row.pseudonym,
      stream_id: place.streamId,
      data: seal(row.data, raw, 'data', place),
      metadata: {
        pseudonym: row.pseudonym,
        ...seal(JSON.stringify({ requestId: row.request_id }), raw, 'metadata', place),
      },
    }
  }
}
