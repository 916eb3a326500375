import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Buffer } from 'node:buffer'
import type { Database } from '../../src/database/database.ts'
import { rebuildProjection } from '../../src/projection/rebuild-projection.ts'
import { isInSync, verifyProjection } from '../../src/projection/verify-projection.ts'
import { exportEvents } from '../../src/transfer/export-events.ts'
import { importEvents, readLines } from '../../src/transfer/import-events.ts'
import {
  count,
  create,
  type KeyedStore,
  openTestStorage,
  STORAGE_KINDS,
  type TestStorage,
} from '../support/storage.ts'
import {
  HEADER,
  keyLine,
  plainLine,
  type SealedFields,
  sealedLine,
  streamIdOf,
  testKey,
} from './sealed-lines.ts'

// A new owner's key: the store's own owners cannot come in by --append.
const trudy = testKey('trudy')
const line = (fields: SealedFields = {}) => sealedLine(trudy, fields)

async function* chunks(...parts: (string | Uint8Array)[]) {
  for (const part of parts) yield typeof part === 'string' ? new TextEncoder().encode(part) : part
}

// A file of the header, trudy's key, a first good event (line 3), then `rest`: a refusal must take
// back the good lines too.
async function file(...rest: string[]): Promise<string> {
  return `${[HEADER, keyLine(trudy), await line({ id: '100', position: '1' }), ...rest].join('\n')}\n`
}

// The data's sealed text with one byte changed: in the IV (the opened text no longer starts with
// `{`), or in the first block of ciphertext (that block opens to noise).
function changeByte(eventLine: string, field: 'data' | 'metadata', at: number): string {
  const event = JSON.parse(eventLine)
  const bytes = Buffer.from(event[field].sealed, 'base64')
  bytes[at] = (bytes[at] ?? 0) ^ 0x5a
  event[field].sealed = bytes.toString('base64')
  return JSON.stringify(event)
}

const HOSTILE: [string, () => Promise<string>, RegExp][] = [
  [
    'an unknown type',
    async () => file(await line({ type: 'PlantDeleted', position: '2' })),
    /^line 4: unknown event type "PlantDeleted"/,
  ],
  [
    'an id that is not a number',
    async () => file(await line({ id: 'abc', position: '2' })),
    /^line 4: data: id must be an integer/,
  ],
  [
    'an id beyond int64',
    async () => file(await line({ id: '9223372036854775808', position: '2' })),
    /^line 4: data: id must be/,
  ],
  [
    'a missing name',
    async () => file(await line({ dataText: '{"id": "2", "tag": null}', position: '2' })),
    /^line 4: data: name must be a string of 1 to 1024/,
  ],
  [
    'an unknown schema version',
    async () => file(await line({ schemaVersion: 7, position: '2' })),
    /^line 4: unknown schema version 7/,
  ],
  [
    'a lone surrogate in the sealed name',
    async () =>
      file(await line({ dataText: '{"id": "2", "name": "a\\ud800b", "tag": null}', position: '2' })),
    /^line 4: \/data\/name: text must be well-formed/,
  ],
  [
    'U+0000 in the sealed tag',
    async () => file(await line({ id: '2', tag: 'a\u0000', position: '2' })),
    /^line 4: \/data\/tag: text must be well-formed/,
  ],
  [
    'an impossible time',
    async () => file(await line({ recordedAt: '2024-13-45T99:99:99Z', position: '2' })),
    /^line 4: recordedAt .* not a valid time/,
  ],
  [
    'a position beyond bigint',
    async () => file(await line({ position: '9223372036854775808' })),
    /^line 4: position must be from 1/,
  ],
  [
    'a position of 20 digits',
    async () => file(await line({ position: '99999999999999999999' })),
    /^line 4: \/position /,
  ],
  [
    'a name of 2,000 characters',
    async () => file(await line({ id: '2', name: 'n'.repeat(2000), position: '2' })),
    /^line 4: data: name must be/,
  ],
  [
    'an empty name',
    async () => file(await line({ id: '2', name: '', position: '2' })),
    /^line 4: data: name must be/,
  ],
  [
    'an empty owner in a key line',
    async () => `${[HEADER, keyLine({ ...testKey(''), pseudonym: 'a'.repeat(32) })].join('\n')}\n`,
    /^line 2: key.owner: the owner must be 1 to 255/,
  ],
  [
    'a stream id that is not the HMAC of the plant id',
    async () => file(await line({ id: '2', streamId: await streamIdOf('5', trudy.bytes), position: '2' })),
    /^line 4: streamId must be the plant's own stream, the HMAC of its id/,
  ],
  [
    'a stream id in the clear',
    async () => file(await line({ id: '2', streamId: 'plant:2:trudy', position: '2' })),
    /^line 4: streamId must be the plant's own stream/,
  ],
  [
    'a wrong key',
    async () =>
      file(await sealedLine({ ...testKey('trudy'), pseudonym: trudy.pseudonym }, { id: '2', position: '2' })),
    /^line 4: data: does not open with the key of its pseudonym \(line 2\)/,
  ],
  [
    'a changed byte in the IV',
    async () => file(changeByte(await line({ id: '2', position: '2' }), 'data', 0)),
    /^line 4: data: does not open with the key/,
  ],
  [
    'a changed byte in the ciphertext',
    async () => file(changeByte(await line({ id: '2', position: '2' }), 'data', 20)),
    /^line 4: data: does not open with the key/,
  ],
  [
    'a changed byte in the sealed request id',
    async () => file(changeByte(await line({ id: '2', position: '2' }), 'metadata', 0)),
    /^line 4: metadata: does not open with the key/,
  ],
  [
    'an event whose pseudonym has no key line',
    async () => file(await sealedLine(testKey('oscar'), { id: '2', position: '2' })),
    /^line 4: pseudonym [0-9a-f]{32} has neither a key line nor an erased line in the file, and the target store has not erased it/,
  ],
  [
    'a key line after the events',
    async () => file(keyLine(testKey('oscar'))),
    /^line 4: key and erased lines come before the events/,
  ],
  [
    'a second key for the owner',
    async () => `${[HEADER, keyLine(trudy), keyLine(testKey('trudy'))].join('\n')}\n`,
    /^line 3: owner "trudy" has a key at line 2 already: two keys for one sub would collide in plants/,
  ],
  [
    'an OwnerErased of an owner whose key the file holds',
    async () =>
      file(
        JSON.stringify({
          position: '2',
          streamId: `owner:${trudy.pseudonym}`,
          streamVersion: 1,
          type: 'OwnerErased',
          schemaVersion: 1,
          data: {},
          metadata: { pseudonym: trudy.pseudonym },
          recordedAt: '2026-01-02T03:04:05.678Z',
        }),
      ),
    /^line 4: OwnerErased of pseudonym [0-9a-f]{32}, whose key is at line 2/,
  ],
  [
    'an unknown export version',
    async () => '{"format":"plant-store-events","version":4}\n',
    /^line 1: export version 4 is unknown/,
  ],
  [
    'a second event for an owner and id of the file',
    async () => file(await line({ id: '100', position: '2', version: 2 })),
    /^line 4: owner "trudy" has plant 100 at line 3 already/,
  ],
  [
    'a second version of a new stream',
    async () => file(await line({ id: '300', position: '2', version: 2 })),
    /^line 4: stream "plant:[0-9a-f]{64}" version 2 does not continue the stream \(expected version 1\)/,
  ],
  [
    "a previous version's line with an unknown type",
    async () => `${plainLine('mallory', { id: '100' }).replace('"PlantCreated"', '"PlantDeleted"')}\n`,
    /^line 1: unknown event type "PlantDeleted"/,
  ],
  [
    "a previous version's line whose stream is not the plant's own",
    async () => `${plainLine('mallory', { id: '100' }).replace('plant:100:mallory', 'plant:5:mallory')}\n`,
    /^line 1: streamId must be the plant's own stream, "plant:100:mallory"/,
  ],
  [
    "a previous version's line with an empty owner",
    async () => `${plainLine('', { id: '100' })}\n`,
    /^line 1: metadata.owner: the owner must be 1 to 255/,
  ],
]

for (const kind of STORAGE_KINDS) {
  describe(`a hostile import on ${kind} changes nothing and leaves the store rebuildable`, () => {
    let storage: TestStorage
    let db: Database
    let before: string
    beforeAll(async () => {
      storage = await openTestStorage(kind)
      db = storage.db
      await create(storage, 'alice', { id: 1n, name: 'Monstera', tag: 'tropical' })
      await create(storage, 'mallory', { id: 7n, name: 'Ivy' })
      before = await exported(db)
    })
    afterAll(() => storage.close())

    async function expectUnchangedAndSound() {
      expect(await exported(db)).toBe(before)
      expect(await count(db, 'plants')).toBe(2)
      const rebuilt = await rebuildProjection(db, storage.keyring)
      expect(rebuilt.plants).toBe(2)
      expect(isInSync((await verifyProjection(db, storage.keyring)).diff)).toBe(true)
      // the live path still answers only 200 (created or unchanged) or 409
      expect((await create(storage, 'mallory', { id: 7n, name: 'Ivy' })).outcome).toBe('unchanged')
      expect((await create(storage, 'mallory', { id: 7n, name: 'Other' })).outcome).toBe('conflict')
      expect(await count(db, 'events')).toBe(2)
    }

    for (const [what, hostile, refusal] of HOSTILE) {
      test(`--append of a file with ${what} is refused in one line naming the line and the rule`, async () => {
        const refused = await refusalOf(storage, chunks(await hostile()), true)
        expect(refused).toMatch(refusal)
        expect(refused).not.toContain('\n')
        await expectUnchangedAndSound()
      })
    }

    test('--append of a key for an owner the store has is refused: two keys for one sub', async () => {
      const mallory = testKey('mallory')
      const refused = await refusalOf(
        storage,
        chunks(`${[HEADER, keyLine(mallory), await sealedLine(mallory, { id: '8' })].join('\n')}\n`),
        true,
      )
      expect(refused).toBe(
        'line 2: owner "mallory" is an owner the target store already has: two keys for one sub would collide in plants',
      )
      await expectUnchangedAndSound()
    })

    test("--append of a previous version's plant the owner already has in the store is refused", async () => {
      const plain = `${plainLine('mallory', { id: '100' })}\n${plainLine('mallory', { id: '7', position: '2' })}\n`
      const refused = await refusalOf(storage, chunks(plain), true)
      expect(refused).toBe(
        'line 2: owner "mallory" already has plant 7 in the store (one plant per owner and id)',
      )
      await expectUnchangedAndSound()
    })

    test('a line that is not UTF-8 is refused by its number', async () => {
      const bytes = new TextEncoder().encode(await line({ id: '2', position: '2' }))
      const broken = bytes.map((byte, at) => (at === 5 ? 0xff : byte))
      const refused = await refusalOf(storage, chunks(await file(), broken, '\n'), true)
      expect(refused).toBe('line 4: not valid UTF-8')
      await expectUnchangedAndSound()
    })

    test('a 50 MB name is refused at its line once the line passes the bound, never held whole', async () => {
      const megabyte = 'x'.repeat(1024 * 1024)
      async function* huge() {
        yield `${await file()}{"position":"2","data":{"name":"`
        for (let sent = 0; sent < 50; sent++) yield megabyte
        yield '"}}\n'
      }
      const heapBefore = process.memoryUsage().heapUsed
      const refused = await refusalOf(storage, huge(), true)
      expect(refused).toBe('line 4: longer than 65536 bytes, more than any event takes')
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(40 * 1024 * 1024)
      await expectUnchangedAndSound()
    })

    test('an empty file is refused: an empty or cut-off input is more likely a mistake than a wish', async () => {
      expect(await refusalOf(storage, chunks(''), true)).toMatch(/^the input holds no events/)
      expect(await refusalOf(storage, chunks('\n\n'), true)).toMatch(/^the input holds no events/)
      await expectUnchangedAndSound()
    })

    test('into an empty store, a hostile file leaves it empty and open to the right import', async () => {
      const empty = await openTestStorage(kind)
      try {
        const refused = await refusalOf(
          empty,
          chunks(await file(await line({ type: 'PlantDeleted', position: '2' }))),
        )
        expect(refused).toMatch(/^line 4: unknown event type/)
        const unnamed = await refusalOf(
          empty,
          chunks(await file(await sealedLine(testKey('oscar'), { position: '2' }))),
        )
        expect(unnamed).toMatch(
          /^line 4: pseudonym [0-9a-f]{32} has neither a key line nor an erased line before its events$/,
        )
        expect(await count(empty.db, 'events')).toBe(0)
        const duplicate = await refusalOf(empty, chunks(await file(await line({ id: '5', position: '1' }))))
        expect(duplicate).toBe('line 4: position 1 is also at line 3 (each event has its own position)')
        expect(await count(empty.db, 'owner_keys')).toBe(0)
        expect(await importEvents(empty.db, empty.keyring, readLines(chunks(await file())))).toBe(1)
        expect(isInSync((await verifyProjection(empty.db, empty.keyring)).diff)).toBe(true)
        expect(await count(empty.db, 'plants')).toBe(1)
      } finally {
        await empty.close()
      }
    })
  })
}

async function exported(db: Database): Promise<string> {
  let text = ''
  await exportEvents(db, async (chunk) => {
    text += chunk
  })
  return text
}

async function refusalOf(
  { db, keyring }: KeyedStore,
  input: AsyncIterable<Uint8Array | string>,
  append = false,
) {
  const outcome = await importEvents(db, keyring, readLines(input), { append }).then(
    (imported) => `imported ${imported}`,
    (error: unknown) => error,
  )
  expect(outcome).toMatchObject({ code: 'IMPORT_REFUSED' })
  return (outcome as Error).message
}
