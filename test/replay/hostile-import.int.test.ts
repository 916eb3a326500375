import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { exportEvents } from '../../src/replay/export-events.ts'
import { ImportRefused, importEvents, readLines } from '../../src/replay/import-events.ts'
import { rebuildProjection } from '../../src/replay/rebuild-projection.ts'
import { isInSync, verifyProjection } from '../../src/replay/verify-projection.ts'
import type { Database } from '../../src/store/database.ts'
import { count, create, openTestStorage, STORAGE_KINDS, type TestStorage } from './storage.ts'

type LineFields = {
  position?: string
  owner?: string
  id?: string
  name?: unknown
  tag?: unknown
  version?: number
  type?: string
  schemaVersion?: number
  recordedAt?: string
  streamId?: string
}

// One exported line, as `events export` writes it, with any field replaced.
function line(fields: LineFields = {}): string {
  const { owner = 'mallory', id = '1', position = '1', version = 1 } = fields
  const data: Record<string, unknown> = {
    id,
    name: 'name' in fields ? fields.name : 'Fern',
    tag: fields.tag ?? null,
  }
  if (fields.name === undefined && 'name' in fields) delete data.name
  return JSON.stringify({
    position,
    streamId: fields.streamId ?? `plant:${id}:${owner}`,
    streamVersion: version,
    type: fields.type ?? 'PlantCreated',
    schemaVersion: fields.schemaVersion ?? 1,
    data,
    metadata: { owner, requestId: 'r' },
    recordedAt: fields.recordedAt ?? '2026-01-02T03:04:05.678Z',
  })
}

async function* chunks(...parts: (string | Uint8Array)[]) {
  for (const part of parts) yield typeof part === 'string' ? new TextEncoder().encode(part) : part
}

// A first good line, then the hostile one: a refusal must take back the good line too.
const good = line({ owner: 'mallory', id: '100', position: '1' })
const HOSTILE: [string, string, RegExp][] = [
  [
    'an unknown type',
    line({ type: 'PlantDeleted', position: '2' }),
    /^line 2: unknown event type "PlantDeleted"/,
  ],
  ['an id that is not a number', line({ id: 'abc', position: '2' }), /^line 2: data: id must be an integer/],
  ['an id beyond int64', line({ id: '9223372036854775808', position: '2' }), /^line 2: data: id must be/],
  [
    'a missing name',
    line({ name: undefined, position: '2' }),
    /^line 2: data: name must be a string of 1 to 1024/,
  ],
  [
    'an unknown schema version',
    line({ schemaVersion: 7, position: '2' }),
    /^line 2: unknown schema version 7/,
  ],
  [
    'a lone surrogate',
    line({ name: 'a\ud800b', position: '2' }),
    /^line 2: \/data\/name: text must be well-formed/,
  ],
  ['U+0000', line({ tag: 'a\u0000', position: '2' }), /^line 2: \/data\/tag: text must be well-formed/],
  [
    'an impossible time',
    line({ recordedAt: '2024-13-45T99:99:99Z', position: '2' }),
    /^line 2: recordedAt .* not a valid time/,
  ],
  ['a position beyond bigint', line({ position: '9223372036854775808' }), /^line 2: position must be from 1/],
  ['a position of 20 digits', line({ position: '99999999999999999999' }), /^line 2: \/position /],
  [
    'a name of 2,000 characters',
    line({ name: 'n'.repeat(2000), position: '2' }),
    /^line 2: data: name must be/,
  ],
  ['an empty name', line({ name: '', position: '2' }), /^line 2: data: name must be/],
  [
    'an empty owner',
    line({ owner: '', position: '2' }),
    /^line 2: metadata.owner: the owner must be 1 to 255/,
  ],
  [
    'a stream that is not the plant own',
    line({ streamId: 'plant:5:mallory', position: '2' }),
    /^line 2: streamId must be/,
  ],
  [
    'a second event for an owner and id of the file',
    line({ owner: 'mallory', id: '100', position: '2', version: 2 }),
    /^line 2: owner "mallory" has plant 100 at line 1 already/,
  ],
  [
    'a second version of a new stream',
    line({ id: '300', position: '2', version: 2 }),
    /^line 2: stream "plant:300:mallory" version 2 does not continue the stream \(expected version 1\)/,
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
      await create(db, 'alice', { id: 1n, name: 'Monstera', tag: 'tropical' })
      await create(db, 'mallory', { id: 7n, name: 'Ivy' })
      before = await exported(db)
    })
    afterAll(() => storage.close())

    async function expectUnchangedAndSound() {
      expect(await exported(db)).toBe(before)
      expect(await count(db, 'plants')).toBe(2)
      const rebuilt = await rebuildProjection(db)
      expect(rebuilt.plants).toBe(2)
      expect(isInSync((await verifyProjection(db)).diff)).toBe(true)
      // the live path still answers only 200 (created or unchanged) or 409
      expect((await create(db, 'mallory', { id: 7n, name: 'Ivy' })).outcome).toBe('unchanged')
      expect((await create(db, 'mallory', { id: 7n, name: 'Other' })).outcome).toBe('conflict')
      expect(await count(db, 'events')).toBe(2)
    }

    for (const [what, hostile, refusal] of HOSTILE) {
      test(`--append of a file with ${what} is refused in one line naming the line and the rule`, async () => {
        const refused = await refusalOf(db, chunks(`${good}\n${hostile}\n`), true)
        expect(refused).toMatch(refusal)
        expect(refused).not.toContain('\n')
        await expectUnchangedAndSound()
      })
    }

    test('--append of a plant the owner already has in the store is refused', async () => {
      const refused = await refusalOf(db, chunks(`${good}\n${line({ id: '7', position: '2' })}\n`), true)
      expect(refused).toBe(
        'line 2: owner "mallory" already has plant 7 in the store (one plant per owner and id)',
      )
      await expectUnchangedAndSound()
    })

    test('--append of version 2 of a stream the store has is refused (an overlap)', async () => {
      const refused = await refusalOf(db, chunks(`${line({ id: '7', position: '2', version: 2 })}\n`), true)
      expect(refused).toMatch(/^line 1: owner "mallory" already has plant 7 in the store/)
      await expectUnchangedAndSound()
    })

    test('a line that is not UTF-8 is refused by its number', async () => {
      const bytes = new TextEncoder().encode(line({ name: 'Fern', position: '2' }))
      const broken = bytes.map((byte, at) => (at === bytes.indexOf(0x46) ? 0xff : byte))
      const refused = await refusalOf(db, chunks(`${good}\n`, broken, '\n'), true)
      expect(refused).toBe('line 2: not valid UTF-8')
      await expectUnchangedAndSound()
    })

    test('a 50 MB name is refused at its line once the line passes the bound, never held whole', async () => {
      const megabyte = 'x'.repeat(1024 * 1024)
      async function* huge() {
        yield `${good}\n{"position":"2","data":{"name":"`
        for (let sent = 0; sent < 50; sent++) yield megabyte
        yield '"}}\n'
      }
      const heapBefore = process.memoryUsage().heapUsed
      const refused = await refusalOf(db, huge(), true)
      expect(refused).toBe('line 2: longer than 65536 bytes, more than any event takes')
      expect(process.memoryUsage().heapUsed - heapBefore).toBeLessThan(40 * 1024 * 1024)
      await expectUnchangedAndSound()
    })

    test('an empty file is refused: an empty or cut-off input is more likely a mistake than a wish', async () => {
      expect(await refusalOf(db, chunks(''), true)).toMatch(/^the input holds no events/)
      expect(await refusalOf(db, chunks('\n\n'), true)).toMatch(/^the input holds no events/)
      await expectUnchangedAndSound()
    })

    test('into an empty store, a hostile file leaves it empty and open to the right import', async () => {
      const empty = await openTestStorage(kind)
      try {
        const refused = await refusalOf(
          empty.db,
          chunks(`${good}\n${line({ type: 'PlantDeleted', position: '2' })}\n`),
        )
        expect(refused).toMatch(/^line 2: unknown event type/)
        expect(await count(empty.db, 'events')).toBe(0)
        const duplicate = await refusalOf(empty.db, chunks(`${good}\n${line({ id: '5', position: '1' })}\n`))
        expect(duplicate).toBe('line 2: position 1 is also at line 1 (each event has its own position)')
        expect(await importEvents(empty.db, readLines(chunks(`${good}\n`)))).toBe(1)
        expect(isInSync((await verifyProjection(empty.db)).diff)).toBe(true)
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

async function refusalOf(db: Database, input: AsyncIterable<Uint8Array | string>, append = false) {
  const outcome = await importEvents(db, readLines(input), { append }).then(
    (imported) => `imported ${imported}`,
    (error: unknown) => error,
  )
  expect(outcome).toBeInstanceOf(ImportRefused)
  return (outcome as ImportRefused).message
}
