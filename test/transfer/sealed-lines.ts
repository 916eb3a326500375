import { Buffer } from 'node:buffer'

// Lines of an export (src/transfer/export-format.ts) written here, as a store would seal them
// (migration 0006: AES-256-CBC, the IV in front, base64; the stream id an HMAC of the plant id), so
// that tests can write files a store never would.
export const HEADER = '{"format":"plant-store-events","version":2}'

export type TestKey = { pseudonym: string; owner: string; bytes: Uint8Array<ArrayBuffer> }

export function testKey(owner: string, pseudonym = randomHex(16)): TestKey {
  return { pseudonym, owner, bytes: crypto.getRandomValues(new Uint8Array(32)) }
}

export function keyLine({ pseudonym, owner, bytes }: TestKey): string {
  return JSON.stringify({ key: { pseudonym, owner, key: Buffer.from(bytes).toString('base64') } })
}

export function erasedLine(pseudonym: string, erasedAt = '2026-01-03T00:00:00.000000Z'): string {
  return JSON.stringify({ erased: { pseudonym, erasedAt } })
}

export async function seal(text: string, bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const key = await crypto.subtle.importKey('raw', bytes, 'AES-CBC', false, ['encrypt'])
  const iv = crypto.getRandomValues(new Uint8Array(16))
  const sealed = new Uint8Array(
    await crypto.subtle.encrypt({ name: 'AES-CBC', iv }, key, new TextEncoder().encode(text)),
  )
  return Buffer.concat([iv, sealed]).toString('base64')
}

export async function streamIdOf(plantId: string, bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const key = await crypto.subtle.importKey('raw', bytes, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign'])
  const digest = await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(plantId))
  return `plant:${Buffer.from(digest).toString('hex')}`
}

export type SealedFields = {
  position?: string
  id?: string
  // The data's JSON text as sealed; by default {"id", "name", "tag"} from the fields.
  dataText?: string
  name?: string
  tag?: string | null
  version?: number
  type?: string
  schemaVersion?: number
  recordedAt?: string
  streamId?: string
  requestId?: string
}

// One sealed PlantCreated of `key`'s owner, as `events export` writes it, with any field replaced.
export async function sealedLine(key: TestKey, fields: SealedFields = {}): Promise<string> {
  const id = fields.id ?? '1'
  const dataText =
    fields.dataText ?? JSON.stringify({ id, name: fields.name ?? 'Fern', tag: fields.tag ?? null })
  return JSON.stringify({
    position: fields.position ?? '1',
    streamId: fields.streamId ?? (await streamIdOf(id, key.bytes)),
    streamVersion: fields.version ?? 1,
    type: fields.type ?? 'PlantCreated',
    schemaVersion: fields.schemaVersion ?? 1,
    data: { sealed: await seal(dataText, key.bytes) },
    metadata: {
      pseudonym: key.pseudonym,
      sealed: await seal(JSON.stringify({ requestId: fields.requestId ?? 'r' }), key.bytes),
    },
    recordedAt: fields.recordedAt ?? '2026-01-02T03:04:05.678Z',
  })
}

// One line of a previous version's export (plaintext, before erasure).
export function plainLine(
  owner: string,
  fields: { id?: string; name?: string; position?: string; requestId?: string } = {},
): string {
  const id = fields.id ?? '1'
  return JSON.stringify({
    position: fields.position ?? '1',
    streamId: `plant:${id}:${owner}`,
    streamVersion: 1,
    type: 'PlantCreated',
    schemaVersion: 1,
    data: { id, name: fields.name ?? 'Fern', tag: null },
    metadata: { owner, requestId: fields.requestId ?? 'r' },
    recordedAt: '2026-01-02T03:04:05.678Z',
  })
}

function randomHex(bytes: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString('hex')
}
