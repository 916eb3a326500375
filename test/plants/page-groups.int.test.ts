import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { createKeyring } from '../../src/crypto/keyring.ts'
import type { Database } from '../../src/database/database.ts'
import { postgresClient } from '../../src/database/postgres-client.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { openStorage } from '../../src/opening/open-store.ts'
import { groupedReads } from '../../src/plants/page-groups.ts'
import { type PageFound, singleReads } from '../../src/plants/page-statements.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { create, STORAGE_KINDS, type StorageKind } from '../support/storage.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

// Listings in flight together share statements (plants/page-groups.ts): each still gets exactly
// its own owner's page and version, as a statement of its own would have read them.

// A migrated store whose statements are counted, through drizzle's logger.
async function openCountedStore(kind: StorageKind) {
  const statements: string[] = []
  const logger = { logQuery: (query: string) => void statements.push(query) }
  const opened = await openUrl(kind)
  const client = postgresClient(opened.url, {
    max: 10,
    onnotice: () => {},
  })
  const close = async () => {
    await client.end()
    await opened.close()
  }
  return {
    db: drizzlePostgres({ client, logger }) as Database,
    keyring: createKeyring(TEST_KEYS),
    statements,
    close,
  }
}

// A migrated database's URL: on the test PostgreSQL, or on a throwaway embedded server.
async function openUrl(kind: StorageKind): Promise<{ url: string; close: () => Promise<void> }> {
  if (kind === 'embedded') {
    const handle = await openStorage({ kind: 'memory', keys: TEST_KEYS })
    return { url: handle.settings.url, close: handle.close }
  }
  const database = await createTestDatabase('page_reads')
  await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
  return { url: database.url, close: database.drop }
}

const OWNERS = Array.from({ length: 40 }, (_, index) => `owner ${index} 🌿`)

for (const kind of STORAGE_KINDS) {
  describe(`grouped listings on ${kind}`, () => {
    let store: Awaited<ReturnType<typeof openCountedStore>>
    beforeAll(async () => {
      store = await openCountedStore(kind)
      // Owner i has i % 5 plants (some none), created round-robin so that positions interleave.
      for (let round = 0; round < 4; round++)
        for (const [index, owner] of OWNERS.entries())
          if (round < index % 5)
            await create(store, owner, {
              id: BigInt(round),
              name: `${owner} plant "${round}"`,
              tag: round % 2 ? 'x' : null,
            })
    })
    afterAll(() => store.close())

    test('pages asked for together are read by a few statements, each the page its own statement reads', async () => {
      // given what each page is when read alone
      const alone = singleReads(store.db)
      const reads = OWNERS.map((owner, index) => ({ owner, from: 0n, count: 1 + (index % 3) }))
      const expected: PageFound[] = []
      for (const read of reads) expected.push(await alone.page(read))
      store.statements.length = 0
      // when they are asked for at once
      const found = await Promise.all(reads.map(groupedReads(store.db, 2).page))
      // then
      expect(found).toEqual(expected)
      expect(store.statements.length).toBeLessThanOrEqual(2)
      expect(expected.map((page) => JSON.parse(page.body).length)).toContain(0)
      expect(expected.some((page) => page.next !== undefined)).toBe(true)
    })

    test("versions asked for together are read by a few statements that read no plant's name", async () => {
      // given
      const alone = singleReads(store.db)
      const expected = []
      for (const owner of OWNERS) expected.push(await alone.version(owner))
      store.statements.length = 0
      // when
      const found = await Promise.all(OWNERS.map(groupedReads(store.db, 2).version))
      // then
      expect(found).toEqual(expected)
      expect(new Set(expected.map((version) => version.position)).size).toBeGreaterThan(OWNERS.length / 2)
      expect(store.statements.length).toBeLessThanOrEqual(2)
      for (const statement of store.statements) expect(statement).not.toContain('"name"')
    })

    test('a page larger than a grouped one is read by a statement of its own', async () => {
      // given
      const reads = groupedReads(store.db, 4)
      store.statements.length = 0
      // when
      const [large, small] = await Promise.all([
        reads.page({ owner: OWNERS[4] as string, from: 0n, count: 500 }),
        reads.page({ owner: OWNERS[3] as string, from: 0n, count: 2 }),
      ])
      // then
      expect(JSON.parse(large.body)).toHaveLength(4)
      expect(JSON.parse(small.body)).toHaveLength(2)
      expect(store.statements.length).toBe(2)
    })
  })
}
