import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { drizzle as drizzlePostgres } from 'drizzle-orm/postgres-js'
import { createKeyring } from '../../src/crypto/keyring.ts'
import type { Database } from '../../src/database/database.ts'
import { postgresClient } from '../../src/database/postgres-client.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { openStorage } from '../../src/opening/open-store.ts'
import { rebuildProjection } from '../../src/projection/rebuild-projection.ts'
import { STORAGE_KINDS, type StorageKind, testApp } from '../support/harness.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { createTestDatabase } from '../support/postgres.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

// Conditional listings (docs/api.md): the ETag follows the caller's plants and nothing else, and a
// matching If-None-Match is answered 304 from an index probe, without reading a row.

type Query = { query: string; params: unknown[] }

// The app on a store whose every statement is recorded, through drizzle's logger.
async function openStore(kind: StorageKind) {
  const queries: Query[] = []
  const logger = { logQuery: (query: string, params: unknown[]) => queries.push({ query, params }) }
  let url: string
  let closeStore: () => Promise<void>
  if (kind === 'postgres') {
    const database = await createTestDatabase('etag')
    await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
    url = database.url
    closeStore = database.drop
  } else {
    const handle = await openStorage({ kind: 'memory', keys: TEST_KEYS })
    url = handle.settings.url
    closeStore = handle.close
  }
  const client = postgresClient(url, { max: 4, onnotice: () => {} })
  const db: Database = drizzlePostgres({ client, logger })
  const explain = async ({ query, params }: Query) => {
    const [row] = await client.unsafe(`explain (analyze, format json) ${query}`, params as string[])
    return (row?.['QUERY PLAN'] as [{ Plan: unknown }] | undefined)?.[0].Plan
  }
  const close = async () => {
    await client.end()
    await closeStore()
  }
  const keyring = createKeyring(TEST_KEYS)
  const { app, tokenFor: token } = testApp({ db, keyring })
  return { db, keyring, app, queries, explain, close, token }
}

type Store = Awaited<ReturnType<typeof openStore>>

// Every node of a plan that reads the plants table, with what it read.
function plantsNodes(plan: unknown): { type: string; rows: number }[] {
  const node = plan as {
    'Node Type': string
    'Relation Name'?: string
    'Actual Rows': number
    Plans?: unknown[]
  }
  const own =
    node['Relation Name'] === 'plants' ? [{ type: node['Node Type'], rows: node['Actual Rows'] }] : []
  return [...own, ...(node.Plans ?? []).flatMap(plantsNodes)]
}

for (const kind of STORAGE_KINDS) {
  describe(`conditional listings on ${kind}`, () => {
    let store: Store
    let alice: string
    let bob: string
    beforeAll(async () => {
      store = await openStore(kind)
      alice = await store.token('alice')
      bob = await store.token('bob')
      for (let id = 1; id <= 30; id++) await create(alice, id, `plant ${id}`)
    }, 180_000)
    afterAll(() => store.close())

    const create = async (token: string, id: number, name: string) => {
      const response = await store.app.handle(
        new Request('http://localhost/plants', {
          method: 'POST',
          headers: { ...tokenHeader(token), 'content-type': 'application/json' },
          body: JSON.stringify({ id, name }),
        }),
      )
      expect(response.status).toBe(200)
    }
    const get = (token: string, path = '/plants', headers: Record<string, string> = {}) =>
      store.app.handle(
        new Request(`http://localhost${path}`, { headers: { ...tokenHeader(token), ...headers } }),
      )
    const tagOf = async (token: string, path = '/plants') => {
      const response = await get(token, path)
      expect(response.status).toBe(200)
      await response.arrayBuffer()
      return response.headers.get('etag') ?? ''
    }

    test('a 200 carries a strong ETag, Cache-Control and the position', async () => {
      const response = await get(alice, '/plants?limit=20')
      expect(response.status).toBe(200)
      expect(response.headers.get('etag')).toMatch(/^"[\x21\x23-\x7e]+"$/)
      expect(response.headers.get('cache-control')).toBe('private, no-cache')
      expect(response.headers.get('plant-store-position')).toMatch(/^[1-9][0-9]*$/)
      expect(((await response.json()) as unknown[]).length).toBe(20)
    })

    test('a matching If-None-Match is 304 with no body, the ETag, the position and Cache-Control', async () => {
      const first = await get(alice, '/plants?limit=20')
      await first.arrayBuffer()
      const tag = first.headers.get('etag') ?? ''
      const response = await get(alice, '/plants?limit=20', { 'if-none-match': tag })
      expect(response.status).toBe(304)
      expect(await response.text()).toBe('')
      expect(response.headers.get('etag')).toBe(tag)
      expect(response.headers.get('plant-store-position')).toBe(first.headers.get('plant-store-position'))
      expect(response.headers.get('cache-control')).toBe('private, no-cache')
      expect(response.headers.get('content-type')).toBeNull()
    })

    test('If-None-Match matches by weak comparison, in a list, and as *; a stale or malformed one gets the 200', async () => {
      const tag = await tagOf(alice)
      const status = async (field: string) => {
        const response = await get(alice, '/plants', { 'if-none-match': field })
        await response.arrayBuffer()
        return response.status
      }
      expect(await status(`W/${tag}`)).toBe(304)
      expect(await status(`"x", W/"y" , ${tag}`)).toBe(304)
      expect(await status('*')).toBe(304)
      expect(await status('"0.0.all.0"')).toBe(200)
      expect(await status(tag.slice(1, -1))).toBe(200)
      const stale = await get(alice, '/plants', { 'if-none-match': '"1.0.all.0"' })
      expect(stale.status).toBe(200)
      expect(((await stale.json()) as unknown[]).length).toBeGreaterThanOrEqual(30)
    })

    test('each page has a tag of its own: one page is never 304 for another', async () => {
      const first = await get(alice, '/plants?limit=5')
      await first.arrayBuffer()
      const next = /<([^>]+)>/.exec(first.headers.get('link') ?? '')?.[1] ?? ''
      const tags = [
        first.headers.get('etag'),
        await tagOf(alice, next),
        await tagOf(alice, '/plants?limit=6'),
        await tagOf(alice),
      ]
      expect(new Set(tags).size).toBe(4)
      const response = await get(alice, next, { 'if-none-match': first.headers.get('etag') ?? '' })
      expect(response.status).toBe(200)
      await response.arrayBuffer()
    })

    test("the ETag changes with a new plant of the caller and not with another owner's", async () => {
      const before = await tagOf(alice)
      // when bob creates a plant, alice's tag stays
      await create(bob, 1, "bob's")
      expect(await tagOf(alice)).toBe(before)
      // when alice does, it changes, and her old tag gets the new listing
      await create(alice, 100, 'new')
      const after = await tagOf(alice)
      expect(after).not.toBe(before)
      const stale = await get(alice, '/plants', { 'if-none-match': before })
      expect(stale.status).toBe(200)
      expect(((await stale.json()) as { name: string }[]).at(-1)).toEqual({ name: 'new' })
    })

    test('a rebuild that changes nothing keeps every tag; one that changes rows changes their owners', async () => {
      const alicePage = await tagOf(alice, '/plants?limit=20')
      const bobs = await tagOf(bob)
      await rebuildProjection(store.db, store.keyring)
      expect(await tagOf(alice, '/plants?limit=20')).toBe(alicePage)
      expect(await tagOf(bob)).toBe(bobs)
      // given alice's projection drifted from the log, which leaves her head where it was
      await store.db.execute(sql`update plants set name = 'drifted' where owner = 'alice' and id = 2`)
      const drifted = await tagOf(alice, '/plants?limit=20')
      expect(drifted).toBe(alicePage)
      // when a rebuild repairs it, her tag changes (twice over: a second drift and repair too),
      // and bob's, whose rows it left as they were, does not
      await rebuildProjection(store.db, store.keyring)
      const repaired = await tagOf(alice, '/plants?limit=20')
      expect(repaired).not.toBe(alicePage)
      expect(await tagOf(bob)).toBe(bobs)
      await store.db.execute(sql`update plants set name = 'drifted' where owner = 'alice' and id = 2`)
      await rebuildProjection(store.db, store.keyring)
      expect(new Set([alicePage, repaired, await tagOf(alice, '/plants?limit=20')]).size).toBe(3)
      const names = (await (await get(alice, '/plants?limit=2')).json()) as { name: string }[]
      expect(names).toEqual([{ name: 'plant 1' }, { name: 'plant 2' }])
    })

    test('a 304 reads no row: one statement, which probes the indexes', async () => {
      // given a store of some size, so that PostgreSQL plans as it would in service
      await store.db.execute(sql`insert into plants (owner, id, name, tag, position)
        select 'owner ' || (n % 100), n, 'plant ' || n, null, 1000000 + n from generate_series(1, 20000) as n`)
      await store.db.execute(sql`analyze plants`)
      const tag = await tagOf(alice, '/plants?limit=20')
      store.queries.length = 0
      const unchanged = await get(alice, '/plants?limit=20', { 'if-none-match': tag })
      expect(unchanged.status).toBe(304)
      const probes = store.queries.splice(0)
      expect(probes.length).toBe(1)
      expect(probes[0]?.query).not.toContain('"name"')
      const page = await get(alice, '/plants?limit=20')
      await page.arrayBuffer()
      const reads = store.queries.splice(0)
      expect(reads.length).toBe(1)
      // then its plan reads at most one entry of the plants table per probe, where
      // the page's reads its rows
      const probed = plantsNodes(await store.explain(probes[0] as Query))
      expect(probed.length).toBeGreaterThan(0)
      for (const node of probed) {
        expect(node.type).toMatch(/^Index (Only )?Scan$/)
        expect(node.rows).toBeLessThanOrEqual(1)
      }
      const read = plantsNodes(await store.explain(reads[0] as Query))
      expect(Math.max(...read.map((node) => node.rows))).toBeGreaterThan(1)
    })
  })
}
