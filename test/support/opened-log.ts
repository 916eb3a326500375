import { Buffer } from 'node:buffer'
import { sql as drizzleSql } from 'drizzle-orm'
import type postgres from 'postgres'
import type { Keyring } from '../../src/crypto/keyring.ts'
import { type Database, rowsOf } from '../../src/database/database.ts'
import { openedData, openedMetadata } from '../../src/event-log/sealed-parts.ts'

// An event of the log opened in the test as the service opens it: with its owner's key, while the
// key exists (`owner` null and nothing opened once it is gone).
export type OpenedLogEvent = {
  position: bigint
  streamId: string
  streamVersion: number
  type: string
  // The data and metadata as stored, JSON text.
  storedData: string
  storedMetadata: string
  owner: string | null
  erasing: boolean
  data: Record<string, unknown> | null
  metadata: Record<string, unknown>
  opened: { requestId?: string; traceparent?: string } | null
}

const LOG = `select e.position::text as position, e.stream_id, e.stream_version, e.type, e.schema_version, e.data::text as data,
                    e.metadata::text as metadata, k.owner, k.erasing, k.pseudonym, encode(k.key, 'base64') as key
             from events e left join owner_keys k on k.pseudonym = e.metadata->>'pseudonym'
             order by e.position`

type Row = {
  position: string
  stream_id: string
  stream_version: number
  type: string
  schema_version: number
  data: string
  metadata: string
  owner: string | null
  erasing: boolean | null
  pseudonym: string | null
  key: string | null
}

// The whole log, opened, through either a postgres.js client or the app's database.
export async function openedLog(
  client: postgres.Sql | Database,
  keyring: Keyring,
): Promise<OpenedLogEvent[]> {
  const rows =
    'execute' in client
      ? rowsOf<Row>(await client.execute(drizzleSql.raw(LOG)))
      : ((await client.unsafe(LOG)) as unknown as Row[])
  return rows.map((row) => {
    const position = BigInt(row.position)
    const raw =
      row.key === null || row.pseudonym === null
        ? undefined
        : keyring.open({ pseudonym: row.pseudonym, wrapped: Buffer.from(row.key, 'base64') })
    const stored = {
      position,
      streamId: row.stream_id,
      streamVersion: row.stream_version,
      type: row.type,
      schemaVersion: row.schema_version,
      data: JSON.parse(row.data),
    }
    const metadata = JSON.parse(row.metadata) as Record<string, unknown>
    return {
      position,
      streamId: row.stream_id,
      streamVersion: row.stream_version,
      type: row.type,
      storedData: row.data,
      storedMetadata: row.metadata,
      owner: row.owner,
      erasing: row.erasing === true,
      data: raw === undefined ? null : openedData(stored, raw),
      metadata,
      opened: raw === undefined ? null : openedMetadata(stored, metadata, raw),
    }
  })
}
