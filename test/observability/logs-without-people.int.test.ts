import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import postgres from 'postgres'
import { issueToken } from '../../src/auth/issue-token.ts'
import { type Database, type DatabaseHandle, openPostgres } from '../../src/database/database.ts'
import { migratePostgresDatabase } from '../../src/opening/migrate.ts'
import { createLogger } from '../../src/shared/logger.ts'
import { TEST_SECRET, testApp } from '../support/harness.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

// No log line, at any level, holds a person: not a statement's parameters, a body, a name, a tag, a
// plant id, nor (unless the operator asks for it) the caller's subject. Every line is captured at
// trace while creates meet the database's errors, alone and in a batch.

const PEOPLE = Array.from({ length: 6 }, (_, index) => ({
  subject: `leaky-owner-${index}`,
  plant: {
    id: `91827364554637280${index}`,
    name: `LeakySecretName-${index}`,
    tag: `LeakySecretTag-${index}`,
  },
}))
// Everything of a person that a line could repeat, as it would appear in JSON text.
const TRACES = PEOPLE.flatMap(({ subject, plant }) => [subject, plant.id, plant.name, plant.tag])

let database: TestDatabase
let handle: DatabaseHandle
// A store whose server has gone: nothing listens where it was.
let gone: DatabaseHandle
let admin: postgres.Sql
beforeAll(async () => {
  database = await createTestDatabase('logs_without_people')
  await migratePostgresDatabase(database.url, undefined, TEST_KEYS)
  admin = postgres(database.url, { max: 2, onnotice: () => {} })
  // A create that waits for a lock gives up soon, with an error of the database (not a 503).
  await admin.unsafe(`alter database "${database.name}" set lock_timeout = '300ms'`)
  handle = openPostgres({ keys: TEST_KEYS, url: database.url, poolSize: 4, statementTimeoutMs: 5000 })
  const listener = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data: () => {} } })
  const nowhere = new URL(database.url)
  nowhere.port = String(listener.port)
  listener.stop(true)
  gone = openPostgres({ keys: TEST_KEYS, url: nowhere.toString(), poolSize: 4, statementTimeoutMs: 5000 })
})
afterAll(async () => {
  await handle.close()
  await gone.close()
  await admin.end()
  await database.drop()
})

// The app as main.ts wires it (two batches of creates in flight), logging everything at trace.
function appWithEveryLine({ logSubject, db = handle.db }: { logSubject?: boolean; db?: Database } = {}) {
  const lines: string[] = []
  const logger = createLogger('trace', { write: (line) => void lines.push(line) })
  const { app } = testApp({
    db,
    keyring: handle.keyring,
    logger,
    batchesInFlight: 2,
    logSubject,
  })
  const send = async (subject: string, init: RequestInit = {}, path = '/plants') => {
    const token = await issueToken(TEST_SECRET, { subject, ttlSeconds: 600, now: new Date() })
    const headers = { ...tokenHeader(token), 'content-type': 'application/json', ...init.headers }
    const response = await app.handle(new Request(`http://api${path}`, { ...init, headers }))
    await response.text()
    return response.status
  }
  // Every create at once, so that they share batches.
  const createAll = () =>
    Promise.all(
      PEOPLE.map(({ subject, plant }) =>
        send(subject, {
          method: 'POST',
          body: `{"id":${plant.id},"name":${JSON.stringify(plant.name)},"tag":${JSON.stringify(plant.tag)}}`,
        }),
      ),
    )
  const settle = () => Bun.sleep(20) // request lines are written after the response
  return { lines, send, createAll, settle }
}

// Keys under which a driver or Drizzle keeps a statement and its values.
const STATEMENT_KEYS = ['"params"', '"parameters"', '"query"', '"detail"', '"where"']

function expectNoPerson(lines: string[]) {
  for (const line of lines) {
    for (const trace of TRACES) expect(line).not.toContain(trace)
    for (const key of STATEMENT_KEYS) expect(line).not.toContain(key)
  }
}

describe('logs without people', () => {
  test('creates that meet a lock timeout, in a batch and then one by one, log their errors without their data', async () => {
    // given the plants table locked by another session
    const { lines, createAll, settle } = appWithEveryLine()
    let release = () => {}
    const released = new Promise<void>((resolve) => {
      release = resolve
    })
    const locked = Promise.withResolvers<void>()
    const holder = admin.begin(async (tx) => {
      await tx`lock table plants in access exclusive mode`
      locked.resolve()
      await released
    })
    await locked.promise
    // when every create meets the lock
    const statuses = await createAll().finally(release)
    await holder
    await settle()
    // then each failed, and was logged with what kind of error it met, and nothing of anyone
    expect(statuses).toEqual(PEOPLE.map(() => 500))
    const failures = lines.map((line) => JSON.parse(line)).filter((line) => line.msg === 'unexpected error')
    expect(failures).toHaveLength(PEOPLE.length)
    for (const failure of failures) expect(JSON.stringify(failure.err)).toContain('55P03')
    expectNoPerson(lines)
  })

  test('creates during an outage log the database as unavailable without their data', async () => {
    // given the database gone
    const { lines, createAll, settle } = appWithEveryLine({ db: gone.db })
    // when
    const statuses = await createAll()
    await settle()
    // then
    expect(statuses).toEqual(PEOPLE.map(() => 503))
    const unavailable = lines
      .map((line) => JSON.parse(line))
      .filter((line) => line.msg === 'database unavailable')
    expect(unavailable).toHaveLength(PEOPLE.length)
    for (const line of unavailable) expect(JSON.stringify(line.err)).toContain('ECONNREFUSED')
    expectNoPerson(lines)
  })

  test('a request line names no subject unless the operator turns it on, and then it does', async () => {
    // given
    const quiet = appWithEveryLine()
    const named = appWithEveryLine({ logSubject: true })
    // when
    expect(await quiet.send('leaky-owner-0', {}, '/plants?limit=1')).toBe(200)
    expect(await named.send('leaky-owner-0', {}, '/plants?limit=1')).toBe(200)
    await quiet.settle()
    // then
    const requestLine = (lines: string[]) =>
      lines.map((line) => JSON.parse(line)).find((line) => line.msg === 'request')
    expect(requestLine(quiet.lines)).toMatchObject({ route: '/plants', status: 200 })
    expect(requestLine(quiet.lines)).not.toHaveProperty('subject')
    expectNoPerson(quiet.lines)
    expect(requestLine(named.lines)).toMatchObject({
      route: '/plants',
      status: 200,
      subject: 'leaky-owner-0',
    })
  })

  test('errors of PostgreSQL that quote a value, in their message or their detail, are logged without it', async () => {
    // given two statements whose errors repeat what they were given
    const lines: string[] = []
    const logger = createLogger('trace', { write: (line) => void lines.push(line) })
    const name = PEOPLE[0]?.plant.name ?? ''
    const errors = await Promise.all([
      handle.db.execute(sql`select ${name}::bigint`).catch((error: unknown) => error),
      handle.db
        .execute(sql`insert into owner_generations (owner, generation) values (${name}, 1), (${name}, 2)`)
        .catch((error: unknown) => error),
    ])
    // when they are logged
    for (const err of errors) logger.error({ err }, 'unexpected error')
    // then each is named by its kind and code, and says nothing of what it was given
    expect(lines.map((line) => JSON.parse(line).err.cause)).toMatchObject([
      { code: '22P02' },
      { code: '23505' },
    ])
    expectNoPerson(lines)
  })
})
