import { afterAll, beforeAll, expect, test } from 'bun:test'
import { exportEvents } from '../../src/transfer/export-events.ts'
import { importEvents } from '../../src/transfer/import-events.ts'
import { create, openTestStorage, rowsOf, type TestStorage } from '../support/storage.ts'
import { HEADER, keyLine, sealedLine, type TestKey, testKey } from './sealed-lines.ts'

// The event log (docs/operating.md): successive `events export --after P`, each after the last position of the one
// before, hold every event once, in position order, whatever commits meanwhile: creates of
// several writers, and an --append import whose one transaction commits positions below theirs.
let storage: TestStorage
beforeAll(async () => {
  storage = await openTestStorage('postgres')
})
afterAll(() => storage.close())

async function exportPositions(after: bigint): Promise<bigint[]> {
  let text = ''
  await exportEvents(
    storage.db,
    async (chunk) => {
      text += chunk
    },
    { afterPosition: after, batchSize: 500 },
  )
  return text
    .split('\n')
    .filter((line) => line.startsWith('{"position":'))
    .map((line) => BigInt((JSON.parse(line) as { position: string }).position))
}

// An export of 13 other owners, read slowly.
async function* slowImport(count: number): AsyncGenerator<string> {
  const keys = Array.from({ length: 13 }, (_, owner) => testKey(`imported ${owner}`))
  yield HEADER
  for (const key of keys) yield keyLine(key)
  for (let index = 0; index < count; index++) {
    if (index % 500 === 0) await Bun.sleep(20)
    const key = keys[index % keys.length] as TestKey
    yield await sealedLine(key, {
      id: String(index),
      name: `imported ${index}`,
      requestId: `import-${index}`,
    })
  }
}

test('five successive --after exports under writers and an import: their union is the log', async () => {
  // given: writers and an import running
  let writing = true
  const writers = Array.from({ length: 4 }, async (_, writer) => {
    let id = 0n
    while (writing) await create(storage, `writer ${writer}`, { id: id++, name: `w${writer}` })
  })
  const importing = importEvents(storage.db, storage.keyring, slowImport(10_000), {
    append: true,
    batchSize: 500,
  })
  // when: four exports run meanwhile, each after the last position of the one before, and a
  // fifth once the writers and the import are done
  const exports: bigint[][] = []
  let after = 0n
  for (let round = 0; round < 5; round++) {
    if (round === 4) {
      writing = false
      await Promise.all([...writers, importing])
    } else await Bun.sleep(300)
    const positions = await exportPositions(after)
    exports.push(positions)
    after = positions.at(-1) ?? after
  }
  // then: each in position order, no event twice, and together the whole log
  for (const positions of exports) {
    expect(positions.every((position, index) => index === 0 || position > (positions[index - 1] ?? 0n))).toBe(
      true,
    )
  }
  const union = exports.flat()
  expect(new Set(union).size).toBe(union.length)
  const log = (await rowsOf(storage.db, 'select position::text as p from events order by position')).map(
    (row) => BigInt(String(row.p)),
  )
  expect(union.length).toBe(log.length)
  expect(union).toEqual(log)
  expect(exports.filter((positions) => positions.length > 0).length).toBeGreaterThanOrEqual(3)
}, 120_000)
