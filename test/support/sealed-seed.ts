import { Buffer } from 'node:buffer'
import type postgres from 'postgres'
import type { Keyring } from '../../src/crypto/keyring.ts'
import { seal, streamIdOf } from '../../src/crypto/sealing.ts'

const BATCH = 10_000

// Seeds a log by hand, in bulk, in the form the service writes (docs/erasure.md): each owner's key
// found or made and wrapped here, every event sealed here under it, as a create would. `source` is
// a query of (owner text, id bigint, name text, tag text) rows, read through a cursor, so memory
// stays flat; with `project`, each event gets its `plants` row too. Returns the events appended.
export async function seedSealed(
  sql: postgres.Sql,
  keyring: Keyring,
  source: string,
  { project }: { project: boolean },
): Promise<number> {
  const keys = new Map<string, { pseudonym: string; raw: Uint8Array }>()
  let appended = 0
  const cursor = sql
    .unsafe<{ owner: string; id: string; name: string; tag: string | null }[]>(
      `select owner, id::text as id, name, tag from (${source}) as s order by owner, id`,
    )
    .cursor(BATCH)
  for await (const rows of cursor) {
    const fresh = [...new Set(rows.map((row) => row.owner))].filter((owner) => !keys.has(owner))
    if (fresh.length > 0) {
      const stored = await sql<{ owner: string; pseudonym: string; key: Uint8Array }[]>`
        select owner, pseudonym, key from owner_keys where owner = any(${fresh}) and not erasing`
      for (const row of stored) {
        keys.set(row.owner, {
          pseudonym: row.pseudonym,
          // The seed's own copy: the keyring's is zeroed once idle (src/crypto/keyring.ts).
          raw: new Uint8Array(keyring.open({ pseudonym: row.pseudonym, wrapped: row.key })),
        })
      }
      const made = fresh
        .filter((owner) => !keys.has(owner))
        .map((owner) => {
          const key = keyring.make()
          return { owner, ...key, raw: new Uint8Array(key.raw) }
        })
      if (made.length > 0) {
        await sql`insert into owner_keys (pseudonym, owner, key)
          select pseudonym, owner, decode(wrapped, 'hex')
          from unnest(${made.map((key) => key.pseudonym)}::text[], ${made.map((key) => key.owner)}::text[],
                      ${made.map((key) => Buffer.from(key.wrapped).toString('hex'))}::text[]) as k(pseudonym, owner, wrapped)`
        for (const key of made) keys.set(key.owner, key)
      }
    }
    const sealed = rows.map((row) => {
      const key = keys.get(row.owner) as { pseudonym: string; raw: Uint8Array }
      const data = JSON.stringify({ id: row.id, name: row.name, tag: row.tag })
      const place = { streamId: streamIdOf(row.id, key.raw), streamVersion: 1 }
      return {
        ...row,
        streamId: place.streamId,
        data: JSON.stringify(seal(data, key.raw, 'data', place)),
        metadata: JSON.stringify({
          pseudonym: key.pseudonym,
          ...seal('{"requestId":"seed"}', key.raw, 'metadata', place),
        }),
      }
    })
    const column = <K extends keyof (typeof sealed)[number]>(name: K) => sealed.map((row) => row[name])
    const positions = await sql<{ position: string; stream_id: string }[]>`
      insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
      select stream_id, 1, 'PlantCreated', 1, data::jsonb, metadata::jsonb, now()
      from unnest(${column('streamId')}::text[], ${column('data')}::text[], ${column('metadata')}::text[])
        with ordinality as s(stream_id, data, metadata, n)
      order by n
      returning position::text as position, stream_id`
    if (project) {
      const at = new Map(positions.map((row) => [row.stream_id, row.position]))
      await sql`insert into plants (owner, id, name, tag, position)
        select * from unnest(${column('owner')}::text[], ${column('id')}::bigint[], ${column('name')}::text[],
                             ${column('tag')}::text[], ${sealed.map((row) => at.get(row.streamId) ?? null)}::bigint[])`
    }
    appended += positions.length
  }
  return appended
}
