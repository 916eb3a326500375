import { expect, test } from 'bun:test'
import { createKeyring } from '../../src/crypto/keyring.ts'
import type { Database } from '../../src/database/database.ts'
import { type ErasureFeed, eraseOwner } from '../../src/erasure/erase-owner.ts'
import { ownerKeyCache } from '../../src/event-log/owner-keys.ts'
import { takeRebuildLock } from '../../src/locks/maintenance-lock.ts'
import { claimWorkTable } from '../../src/locks/work-tables.ts'
import { type CreateResult, createPlant } from '../../src/plants/create-plant.ts'
import { rebuildProjection } from '../../src/projection/rebuild-projection.ts'
import { isInSync, verifyProjection } from '../../src/projection/verify-projection.ts'
import { describeEachStorage } from '../support/each-storage.ts'
import { count, listing, rowsOf } from '../support/storage.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { findTraces } from './traces.ts'

const now = new Date('2026-03-04T05:06:07.089Z')

function createAs(
  db: Database,
  owner: string,
  id: bigint,
  name: string,
  tag: string | null,
  requestId: string,
) {
  return createPlant(
    db,
    ownerKeyCache(createKeyring(TEST_KEYS)),
    { type: 'CreatePlant', owner, plant: { id, name, tag }, now },
    requestId,
  )
}

// The owner to forget, with values found nowhere else, so that a search for them is meaningful.
const ERIN = 'erin-🌱-forget-me'
const ERIN_PLANTS = [
  { id: 918273645546372819n, name: 'Zyxfern-forget', tag: 'zyxtag-forget', requestId: 'zyxreq-forget-1' },
  { id: -7766554433221100n, name: 'Zyxpalm-forget', tag: null, requestId: 'zyxreq-forget-2' },
  { id: 5550123498761n, name: 'Zyxivy-forget 你好', tag: '', requestId: 'zyxreq-forget-3' },
]
const NEEDLES = [
  ERIN,
  'erin-',
  ...ERIN_PLANTS.flatMap(({ id, name, requestId }) => [String(id), name, requestId]),
  'zyxtag-forget',
]

const KEPT = ['kept-ann', 'kept-bo 🌵']

async function plantRows(db: Database, owners: string[]) {
  return rowsOf(
    db,
    `select owner, id::text as id, name, tag, position::text as position from plants
     where owner in (${owners.map((owner) => `'${owner}'`).join(', ')}) order by position`,
  )
}

async function refusal(db: Database, statement: string): Promise<string> {
  return rowsOf(db, statement).then(
    () => 'accepted',
    (error: unknown) => String((error as { cause?: unknown }).cause ?? error),
  )
}

describeEachStorage(
  (kind) => `erasing an owner on ${kind}`,
  async (storage) => {
    for (const { id, name, tag, requestId } of ERIN_PLANTS)
      await createAs(storage.db, ERIN, id, name, tag, requestId)
    for (const [index, owner] of KEPT.entries())
      for (let id = 1n; id <= 3n; id++)
        await createAs(storage.db, owner, id, `kept ${index}-${id}`, id === 2n ? null : 'kept', `kept-${id}`)
  },
  (storage, kind) => {
    test('while four writers of other owners run: the owner is gone from every table and statistic, the rest and the log are kept', async () => {
      // given
      const keptBefore = await plantRows(storage().db, KEPT)
      const eventsBefore = await rowsOf(
        storage().db,
        'select position::text as position from events order by events.position',
      )
      // and statistics that hold the owner, as autovacuum gathers them
      await rowsOf(storage().db, 'analyze')
      expect(await findTraces(storage().db, NEEDLES)).toContain(`pg_stats: ${ERIN}`)
      let writing = true
      const writers = [1, 2, 3, 4].map(async (writer) => {
        let written = 0
        for (let id = 1n; writing; id++, written++) {
          await createAs(storage().db, `writer-${writer}`, id, `w${id}`, null, `w-${writer}-${id}`)
          // The embedded database answers without a turn of the event loop: let timers run.
          await Bun.sleep(1)
        }
        return written
      })
      // when
      await Bun.sleep(50)
      const result = await eraseOwner(storage().db, ERIN)
      await Bun.sleep(50)
      writing = false
      const written = (await Promise.all(writers)).reduce((sum, count) => sum + count, 0)
      // then
      expect(result).toEqual({ plants: 3, completed: 1 })
      expect(await listing(storage().db, ERIN)).toEqual([])
      expect(await plantRows(storage().db, KEPT)).toEqual(keptBefore)
      expect(await findTraces(storage().db, NEEDLES)).toEqual([])
      // and the log keeps every event at its position, with one more: the notice
      const eventsAfter = await rowsOf(
        storage().db,
        'select position::text as position from events order by events.position',
      )
      expect(eventsAfter.slice(0, eventsBefore.length)).toEqual(eventsBefore)
      expect(eventsAfter).toHaveLength(eventsBefore.length + written + 1)
      expect(await count(storage().db, "events where type = 'OwnerErased'")).toBe(1)
      // and it is still append-only
      for (const statement of ['update events set type = type', 'delete from events', 'truncate events'])
        expect(await refusal(storage().db, statement)).toContain('append-only')
      // and the projection is the fold of the log, and a rebuild brings nothing of the owner back
      expect(isInSync((await verifyProjection(storage().db, storage().keyring)).diff)).toBe(true)
      await rebuildProjection(storage().db, storage().keyring)
      expect(await plantRows(storage().db, KEPT)).toEqual(keptBefore)
      expect(await listing(storage().db, ERIN)).toEqual([])
      expect(await findTraces(storage().db, NEEDLES)).toEqual([])
    }, 60_000)

    test('the same subject then creates the ids it had, as a new owner with no past', async () => {
      // when
      const [first] = ERIN_PLANTS
      const again = await createAs(storage().db, ERIN, first?.id ?? 0n, 'A new fern', null, 'again-1')
      // then
      expect(again.outcome).toBe('created')
      expect(await listing(storage().db, ERIN)).toEqual([{ name: 'A new fern' }])
      expect(isInSync((await verifyProjection(storage().db, storage().keyring)).diff)).toBe(true)
      // and erasing them again forgets only what they have now
      expect(await eraseOwner(storage().db, ERIN)).toEqual({ plants: 1, completed: 1 })
      expect(await listing(storage().db, ERIN)).toEqual([])
    })

    test('an owner unknown, or already erased, is 0', async () => {
      expect(await eraseOwner(storage().db, 'never-seen')).toEqual({ plants: 0, completed: 0 })
      expect(await eraseOwner(storage().db, ERIN)).toEqual({ plants: 0, completed: 0 })
    })

    test('creates racing an erasure of their owner: none is written under the destroyed key', async () => {
      // given
      const owner = 'racer'
      await createAs(storage().db, owner, 1n, 'before', null, 'r-1')
      const [key] = await rowsOf(storage().db, `select pseudonym from owner_keys where owner = '${owner}'`)
      // when twenty creates run around the erasure
      const creates: Promise<CreateResult>[] = []
      for (let id = 2n; id <= 21n; id++) {
        creates.push(createAs(storage().db, owner, id, `racing ${id}`, null, `r-${id}`))
        if (id === 8n) creates.push(eraseOwner(storage().db, owner).then(() => ({}) as CreateResult))
        await Bun.sleep(1)
      }
      const results = await Promise.all(creates)
      // then every event under the erased pseudonym precedes its notice
      const [notice] = await rowsOf(
        storage().db,
        `select position::text as position from events where stream_id = 'owner:${key?.pseudonym}'`,
      )
      const [late] = await rowsOf(
        storage().db,
        `select count(*)::int as n from events
         where metadata->>'pseudonym' = '${key?.pseudonym}' and position > ${notice?.position}`,
      )
      expect(late?.n).toBe(0)
      // and the owner lists exactly the creates that came after it, as a new owner
      const after = results
        .filter(
          (result) => result.outcome === 'created' && result.position > BigInt(String(notice?.position)),
        )
        .sort((a, b) => (a.position < b.position ? -1 : 1))
        .map((result) => ({ name: result.plant.name }))
      expect(await listing(storage().db, owner)).toEqual(after)
      expect(isInSync((await verifyProjection(storage().db, storage().keyring)).diff)).toBe(true)
    })

    test('an erasure stopped after its first step hides the owner at once, and a rerun completes it', async () => {
      // given
      const owner = 'pending-pat'
      await createAs(storage().db, owner, 1n, 'Pending fern', 'pending-tag', 'p-1')
      const unreachable: ErasureFeed = {
        awaitPublished: async () => {
          throw new Error('NATS unreachable')
        },
        purge: async () => {},
      }
      // when
      const failed = await eraseOwner(storage().db, owner, { feed: unreachable }).catch(
        (error: Error) => error,
      )
      // then
      expect(String(failed)).toContain('NATS unreachable')
      expect(await listing(storage().db, owner)).toEqual([])
      expect(await count(storage().db, `owner_keys where owner = '${owner}' and erasing`)).toBe(1)
      // when the command is run again, the feed reachable
      const purged: unknown[] = []
      const published: bigint[] = []
      const feed: ErasureFeed = {
        awaitPublished: async (position) => {
          published.push(position)
        },
        purge: async (erasure) => {
          purged.push(erasure)
        },
      }
      const rerun = await eraseOwner(storage().db, owner, { feed })
      // then
      expect(rerun).toEqual({ plants: 1, completed: 1 })
      expect(purged).toEqual([{ pseudonym: expect.any(String), owner }])
      expect(published).toHaveLength(1)
      expect(await count(storage().db, `owner_keys where owner = '${owner}'`)).toBe(0)
      expect(await findTraces(storage().db, [owner, 'Pending fern', 'pending-tag', 'p-1'])).toEqual([])
    })

    test('the work tables of a rebuild and an import that died hold the owner in the clear: the erasure drops them', async () => {
      // given: tables as runs killed half-way leave them, nobody holding them
      await createAs(storage().db, 'dora', 1n, 'Dorafern-forget', 'dora-tag', 'dora-1')
      await rowsOf(storage().db, 'create table plants_rebuild_deaddora (like plants including defaults)')
      await rowsOf(storage().db, 'insert into plants_rebuild_deaddora select * from plants')
      await rowsOf(
        storage().db,
        'create unlogged table import_staging_deaddora (line int, owner text, event jsonb)',
      )
      await rowsOf(
        storage().db,
        `insert into import_staging_deaddora values (1, 'dora', '{"data": {"name": "Dorafern-forget"}}')`,
      )
      expect(await findTraces(storage().db, ['Dorafern-forget'])).toHaveLength(3)
      // when
      const result = await eraseOwner(storage().db, 'dora')
      // then
      expect(result).toEqual({ plants: 1, completed: 1 })
      expect(await findTraces(storage().db, ['dora', 'Dorafern-forget', 'dora-tag', 'dora-1'])).toEqual([])
      expect(await count(storage().db, "pg_class where relname like '%deaddora'")).toBe(0)
    })

    test('every run refreshes the statistics last, one that finds nobody to erase too (a rerun after a crash before it)', async () => {
      // given: statistics gathered while an owner's rows were there, the rows gone since (as a run
      // that was killed after deleting the key and before its ANALYZE leaves them)
      for (let id = 1n; id <= 3n; id++)
        await createAs(storage().db, 'stale-stan', id, 'Stalefern', null, 'stale')
      await rowsOf(storage().db, 'analyze plants, owner_keys')
      await rowsOf(storage().db, "delete from plants where owner = 'stale-stan'")
      await rowsOf(storage().db, "delete from owner_keys where owner = 'stale-stan'")
      expect(await findTraces(storage().db, ['stale-stan'])).toContain('pg_stats: stale-stan')
      // when
      const result = await eraseOwner(storage().db, 'nobody-at-all')
      // then
      expect(result).toEqual({ plants: 0, completed: 0 })
      expect(await findTraces(storage().db, ['stale-stan'])).not.toContain('pg_stats: stale-stan')
    })

    if (kind === 'postgres')
      test('an erasure waits for an import running before it deletes the key, saying so; past --wait it stays pending', async () => {
        // given: an import in progress, its staging table claimed
        await createAs(storage().db, 'ivan', 1n, 'Ivan fern', null, 'ivan-1')
        await createAs(storage().db, 'ivan', 2n, 'Ivan fig', null, 'ivan-2')
        const claim = await claimWorkTable(storage().db, 'import_staging_liveivan')
        await rowsOf(storage().db, 'create unlogged table import_staging_liveivan (line int)')
        // when: the erasure may wait half a second
        const told: string[] = []
        const short = eraseOwner(storage().db, 'ivan', { waitMs: 500, onWait: (what) => told.push(what) })
        // then
        await expect(short).rejects.toMatchObject({ code: 'ERASURE_PENDING' })
        await expect(short).rejects.toThrow('an events import is running (its table import_staging_liveivan')
        expect(told).toEqual([
          'an events import is running (its table import_staging_liveivan may hold the owner): the erasure waits for it to end',
        ])
        expect(await count(storage().db, "owner_keys where owner = 'ivan' and erasing")).toBe(1)
        expect(await listing(storage().db, 'ivan')).toEqual([])
        // when the import ends while a rerun waits
        const rerun = eraseOwner(storage().db, 'ivan', { waitMs: 10_000 })
        await Bun.sleep(300)
        await rowsOf(storage().db, 'drop table import_staging_liveivan')
        await claim.release()
        // then the rerun completes it, with the plants the owner had
        expect(await rerun).toEqual({ plants: 2, completed: 1 })
        expect(await count(storage().db, "owner_keys where owner = 'ivan'")).toBe(0)
      })

    if (kind === 'postgres')
      test('an erasure waits for a rebuild running: its table would bring the owner back at the swap', async () => {
        // given
        await createAs(storage().db, 'waits', 1n, 'Waiting fern', null, 'wait-1')
        const rebuild = await takeRebuildLock(storage().db)
        // when
        let erased = false
        const told: string[] = []
        const erasure = eraseOwner(storage().db, 'waits', { onWait: (what) => told.push(what) }).then(
          () => (erased = true),
        )
        await Bun.sleep(300)
        // then: it says so, once
        expect(told).toEqual(['a projection rebuild is running: the erasure waits for it to finish'])
        expect(erased).toBe(false)
        expect(await listing(storage().db, 'waits')).toEqual([{ name: 'Waiting fern' }])
        await rebuild.release()
        await erasure
        expect(await listing(storage().db, 'waits')).toEqual([])
      })
  },
  30_000,
)
