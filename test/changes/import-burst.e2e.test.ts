import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import type { Subprocess } from 'bun'
import postgres from 'postgres'
import { postPlant } from '../support/plant-client.ts'
import { type ServerProcess, startCli } from '../support/server-process.ts'
import { type Service, startService } from '../support/service.ts'
import { changesRequest, openSse, plantOf, type SseReader } from '../support/sse-client.ts'
import { HEADER, keyLine, sealedLine, testKey } from '../transfer/sealed-lines.ts'

const IMPORTED = 10_000
// The owner's plants before the stream opens (one catch-up read: fewer than its batch of 100) and
// those created while an import holds the log: about 2.1 KB of event text each, so the burst
// (0.95 MB) stays within what a stream holds while it catches up (1 MiB) and the two together
// pass it.
const EARLIER = 90
const BURST = 450
const plantBody = (id: number) => ({ id, name: `${id} `.padEnd(1024, 'n'), tag: `${id} `.padEnd(1023, 't') })

// Live changes (docs/live-changes.md) beside an import (docs/operating.md, The event log), as the audit ran it: an `events import --append` of other owners' events
// commits while the service's default settings hold a stream of one owner, whose plants created
// meanwhile all reach the stream at once. The steps are held where they must be: the import's
// process stopped (SIGSTOP) inside its final transaction, the stream's first read behind a lock
// the test requests on the projection. No gap, whatever the timing.
describe("an import's commit releasing a burst into a stream that catches up (a real server, PostgreSQL)", () => {
  let service: Service
  let sql: postgres.Sql
  let server: ServerProcess
  const readers: SseReader[] = []
  const children: Subprocess[] = []
  const env = () => service.env
  const token = (subject: string) => service.tokenFor(subject, 3600)
  const until = async (what: string, check: () => Promise<boolean>) => {
    const deadline = Date.now() + 60_000
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`not reached in 60 s: ${what}`)
      await Bun.sleep(5)
    }
  }
  const create = async (owner: string, ids: number[]) => {
    let next = 0
    await Promise.all(
      Array.from({ length: 8 }, async () => {
        for (let id = ids[next++]; id !== undefined; id = ids[next++])
          expect((await postPlant(server.url, owner, plantBody(id))).status).toBe(200)
      }),
    )
  }
  const importFile = async () => {
    const keys = Array.from({ length: 40 }, (_, index) => testKey(`other-${index}`))
    const lines = [HEADER, ...keys.map(keyLine)]
    for (let index = 0; index < IMPORTED; index++) {
      const key = keys[index % keys.length] as (typeof keys)[number]
      lines.push(
        await sealedLine(key, { id: String(index), name: `imported ${index}`, position: String(index + 1) }),
      )
    }
    return `${lines.join('\n')}\n`
  }
  const locks = (where: string) =>
    sql
      .unsafe(
        `select 1 from pg_locks where ${where} and database = (select oid from pg_database where datname = current_database())`,
      )
      .then((rows) => rows.length > 0)

  beforeAll(async () => {
    service = await startService({ label: 'import_burst' })
    sql = postgres(String(service.databaseUrl), { max: 4, onnotice: () => {} })
    server = service.server
  })
  afterAll(async () => {
    await Promise.all(readers.map((reader) => reader.close()))
    for (const child of children) child.kill('SIGKILL')
    await sql.end({ timeout: 1 })
    await service.stop()
  })

  test('every acknowledged plant reaches the stream once, in order', async () => {
    // given: the owner's earlier plants, and a stream of another owner that tells when the
    // service has read the log up to a plant created last
    const owner = await token('watched')
    const signalOwner = await token('signal')
    const earlier = Array.from({ length: EARLIER }, (_, index) => index + 1)
    await create(owner, earlier)
    const signal = await openSse(changesRequest(server.url, signalOwner))
    readers.push(signal)
    // and an import stopped inside its final transaction, which holds the log's horizon
    const importing = startCli(['events', 'import', '--append'], env(), { input: await importFile() })
    children.push(importing)
    await until('the import inserts its events', () =>
      locks("relation = 'events'::regclass and mode = 'RowExclusiveLock' and granted"),
    )
    importing.kill('SIGSTOP')
    // and the owner's burst, acknowledged while the import holds the log
    const burst = Array.from({ length: BURST }, (_, index) => 1000 + index)
    await create(owner, burst)
    expect((await postPlant(server.url, signalOwner, { id: 1, name: 'signal' })).status).toBe(200)
    // when: the owner's stream opens from the beginning, its first read queued behind a lock on the
    // projection, and the import commits meanwhile
    const projection = await sql.reserve()
    await projection`begin`
    const locked = projection`lock table plants in access exclusive mode`.then(() => {})
    await until('the lock is requested', () =>
      locks("relation = 'plants'::regclass and mode = 'AccessExclusiveLock' and not granted"),
    )
    const opening = openSse(changesRequest(server.url, owner, { after: '0' }))
    await until('the stream reads the projection', () =>
      locks("relation = 'plants'::regclass and mode = 'AccessShareLock' and not granted"),
    )
    importing.kill('SIGCONT')
    expect(await importing.exited).toBe(0)
    await locked
    expect(await signal.take(1, 60_000)).toHaveLength(1)
    await projection`commit`
    projection.release()
    // then
    const reader = await opening
    readers.push(reader)
    const events = await reader.take(EARLIER + BURST, 30_000)
    const ids = events.map((event) => Number(plantOf(event).id))
    const missing = [...earlier, ...burst].filter((id) => !ids.includes(id))
    expect({ missing: missing.length, delivered: ids.length }).toEqual({
      missing: 0,
      delivered: EARLIER + BURST,
    })
    const positions = events.map((event) => BigInt(event.id ?? ''))
    expect(positions.every((position, index) => index === 0 || position > (positions[index - 1] ?? 0n))).toBe(
      true,
    )
    expect(await reader.collectFor(300)).toEqual([])
  }, 180_000)
})
