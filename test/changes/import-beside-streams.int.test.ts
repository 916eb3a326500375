import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { importEvents } from '../../src/transfer/import-events.ts'
import { createHarness, type Harness } from '../support/harness.ts'
import { changesRequest, openSse, plantOf, type SseReader } from '../support/sse-client.ts'
import { HEADER, keyLine, plainLine, sealedLine, type TestKey, testKey } from '../transfer/sealed-lines.ts'

// Live changes (docs/live-changes.md) beside an import (docs/operating.md, The event log): an `events import --append` is one large transaction whose positions
// interleave with the creates committed meanwhile. An open stream must still deliver every
// acknowledged plant of its owner once, in position order, whoever the import is for.
const IMPORTED = Number(process.env.IMPORT_BESIDE_STREAMS_EVENTS ?? 40_000)
const WRITERS = 3

// Lines that the import reads slowly enough for creates to interleave with its batches: an export
// of this version (its owners' keys, then their sealed events) or, `plain`, of the previous one,
// whose events are sealed on the way in under their owner's key, found in the store or made.
async function* importLines(
  owners: (index: number) => string,
  count: number,
  plain: boolean,
): AsyncGenerator<string> {
  const keys = new Map<string, TestKey>()
  if (!plain) {
    for (let index = 0; index < count; index++) {
      if (!keys.has(owners(index))) keys.set(owners(index), testKey(owners(index)))
    }
    yield HEADER
    for (const key of keys.values()) yield keyLine(key)
  }
  for (let index = 0; index < count; index++) {
    if (index % 2000 === 0) await Bun.sleep(5)
    const fields = {
      id: String(1_000_000 + index),
      name: `imported ${1_000_000 + index}`,
      requestId: `import-${index}`,
    }
    const key = keys.get(owners(index))
    yield key ? await sealedLine(key, fields) : plainLine(owners(index), fields)
  }
}

describe('an open change stream beside an --append import (PostgreSQL)', () => {
  let h: Harness
  const readers: SseReader[] = []
  beforeAll(async () => {
    h = await createHarness('postgres', { changes: {} })
  })
  afterAll(async () => {
    await Promise.all(readers.map((reader) => reader.close()))
    await h.close()
  })

  const run = async (
    owner: string,
    importOwners: (index: number) => string,
    ownImported: number,
    plain = false,
  ) => {
    // given: a stream of the owner, open from the beginning and caught up
    const token = await h.tokenFor(owner)
    const reader = await openSse(changesRequest('http://localhost', token, { after: '0' }), (request) =>
      h.app.handle(request),
    )
    readers.push(reader)
    // when: an import runs while the owner creates plants through the API
    let importing = true
    const imported = importEvents(h.db, h.keyring, importLines(importOwners, IMPORTED, plain), {
      append: true,
    }).finally(() => {
      importing = false
    })
    const acknowledged: string[] = []
    let next = 1
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        // Creates go on a little after the import, so that some land right after its commit.
        let after = 20
        while (importing || after-- > 0) {
          const id = next++
          const response = await h.request('POST', '/plants', { token, body: { id, name: `live ${id}` } })
          if (response.status === 200) acknowledged.push(String(id))
        }
      }),
    )
    expect(await imported).toBe(IMPORTED)
    // then: every acknowledged create, and the owner's imported plants, arrive once, in order
    const expected = acknowledged.length + ownImported
    const events = await reader.take(expected, 30_000)
    const late = await reader.collectFor(300)
    const ids = [...events, ...late].map((event) => plantOf(event).id)
    const delivered = new Set(ids)
    expect(acknowledged.filter((id) => !delivered.has(id))).toEqual([])
    expect(ids.length).toBe(expected)
    expect(delivered.size).toBe(expected)
    const positions = [...events, ...late].map((event) => BigInt(event.id ?? ''))
    expect(positions.every((position, index) => index === 0 || position > (positions[index - 1] ?? 0n))).toBe(
      true,
    )
  }

  test('an import of other owners: every acknowledged plant once', async () => {
    await run('watcher', (index) => `other ${index % 97}`, 0)
  }, 180_000)

  // Only a previous version's export can bring plants to an owner the store has (its own
  // exports carry keys, and two keys for one sub are refused): sealed under the owner's key.
  test("an old export of the owner's own plants among others: every plant once, in position order", async () => {
    const share = 4
    await run(
      'importer',
      (index) => (index % share === 0 ? 'importer' : `else ${index % 89}`),
      IMPORTED / share,
      true,
    )
  }, 180_000)
})
