import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { ChangeReads } from '../../src/changes/change-reads.ts'
import { readOwnerChanges } from '../../src/changes/owner-changes.ts'
import { replicaChangeReads } from '../../src/changes/replica-change-reads.ts'
import { followWalMarks, hasReplayed, type WalMarks } from '../../src/changes/wal-marks.ts'
import { type DatabaseHandle, openPostgres } from '../../src/database/database.ts'
import { ownerKeyCache } from '../../src/event-log/owner-keys.ts'
import { type LogFollower, runLogFollower } from '../../src/follower/follower.ts'
import { openStorage } from '../../src/opening/open-store.ts'
import { createPlant } from '../../src/plants/create-plant.ts'
import { silentLogger } from '../../src/shared/logger.ts'
import { type PrimaryWithReplica, startPrimaryWithReplica } from '../support/postgres-replica.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { eventually } from './replica-client.ts'

// The rule that lets a change stream read from a replica (docs/live-changes.md; docs/operating.md, Scaling out): a read shows every
// event up to the follower's position only on a replica that has replayed the primary's WAL past
// where it stood once the follower had settled that position.
const WAIT_MS = 200
let pair: PrimaryWithReplica
let primary: DatabaseHandle
let replica: DatabaseHandle
let follower: LogFollower
let marks: WalMarks
const served: string[] = []
let reads: ChangeReads
const position = () => follower.position() ?? 0n

beforeAll(async () => {
  pair = await startPrimaryWithReplica()
  const settings = { poolSize: 4, statementTimeoutMs: 10_000 }
  primary = await openStorage({ kind: 'postgres', keys: TEST_KEYS, url: pair.primaryUrl, ...settings })
  replica = openPostgres({ keys: TEST_KEYS, url: pair.replicaUrl, ...settings })
  follower = runLogFollower({
    db: primary.db,
    keyring: primary.keyring,
    logger: silentLogger(),
    pollMs: 20,
  })
  await follower.ready()
  marks = followWalMarks({ primary: primary.db, position })
  const set = { available: () => [{ name: 'replica', db: replica.db }], markDown: () => {} }
  reads = replicaChangeReads({
    primary: primary.db,
    replicas: set,
    marks,
    position,
    waitMs: WAIT_MS,
    onRead: (source) => served.push(source),
  })
}, 60_000)
afterAll(async () => {
  await follower?.stop()
  await replica?.close()
  await primary?.close()
  pair?.stop()
}, 30_000)

let nextId = 1n
// A plant of `owner`, once the follower has settled it.
const created = async (owner: string, name: string) => {
  const command = {
    type: 'CreatePlant' as const,
    owner,
    plant: { id: nextId++, name, tag: null },
    now: new Date(),
  }
  const { position: at } = await createPlant(
    primary.db,
    ownerKeyCache(primary.keyring),
    command,
    `request ${name}`,
  )
  await eventually('the follower settles the plant', async () => position() >= at)
  return at
}
const namesOf = (changes: { name: string }[]) => changes.map((change) => change.name)

describe('the WAL mark of the follower position', () => {
  test('a replica behind the mark is not trusted; its own view would miss the plant the follower passed', async () => {
    // given a plant the replica has replayed, then replay paused and a second plant settled
    await created('lagging', 'replayed')
    await pair.caughtUp()
    await pair.pauseReplay()
    try {
      const second = await created('lagging', 'not replayed')
      // when the follower's position is marked
      const mark = await marks.atLeast(position())
      // then the mark covers the second plant, and the replica has not replayed past it
      expect(mark.position).toBeGreaterThanOrEqual(second)
      expect(await hasReplayed(replica.db, mark.lsn)).toBe(false)
      // and read up to that position the replica itself would miss the second plant
      const unchecked = await readOwnerChanges(replica.db, 'lagging', 0n, mark.position, 100)
      expect(namesOf(unchecked)).toEqual(['replayed'])
      // and a stream's catch-up and head, after the wait, come from the primary, whole
      served.length = 0
      const started = performance.now()
      expect(namesOf(await reads.changesAfter('lagging', 0n, 100))).toEqual(['replayed', 'not replayed'])
      expect(performance.now() - started).toBeGreaterThanOrEqual(WAIT_MS - 50)
      expect(await reads.head('lagging')).toBe(second)
      expect(served).toEqual(['primary', 'primary'])
    } finally {
      await pair.resumeReplay()
    }
    // when replay resumes, the replica passes the mark and serves the same reads itself
    await pair.caughtUp()
    served.length = 0
    expect(namesOf(await reads.changesAfter('lagging', 0n, 100))).toEqual(['replayed', 'not replayed'])
    expect(served).toEqual(['replica'])
  })

  test('a replica that replays while a read waits serves it', async () => {
    await pair.pauseReplay()
    let resumed: Promise<void> = Promise.resolve()
    try {
      const at = await created('waiting', 'late')
      served.length = 0
      resumed = Bun.sleep(WAIT_MS / 4).then(pair.resumeReplay)
      expect(await reads.head('waiting')).toBe(at)
      expect(served).toEqual(['replica'])
    } finally {
      await resumed
      await pair.resumeReplay()
    }
  })

  test('one read of the primary marks a position for every stream that asks meanwhile', async () => {
    const at = await created('marks', 'marked')
    const [first, ...rest] = await Promise.all(Array.from({ length: 20 }, () => marks.atLeast(at)))
    expect(first?.position).toBeGreaterThanOrEqual(at)
    for (const mark of rest) expect(mark).toBe(first as typeof mark)
    // and while the follower stands still, the mark is reused
    expect(await marks.atLeast(at)).toBe(first as NonNullable<typeof first>)
  })
})
