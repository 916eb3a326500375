import { afterAll, expect, test } from 'bun:test'
import { rmSync } from 'node:fs'
import { makeDataDirSync } from '../support/data-dir.ts'
import { createTestFeed } from '../support/nats.ts'
import { POSTGRES_ADMIN_URL } from '../support/postgres.ts'
import { runServerToExit } from '../support/server-process.ts'
import { SECRET } from './replica-client.ts'

// A bad read-replica or feed-cluster setting stops the server's start, naming the variable.
const dataDir = makeDataDirSync('plant-store-config-')
afterAll(() => rmSync(dataDir, { recursive: true, force: true }))

const onPostgres = { DATABASE_URL: POSTGRES_ADMIN_URL, AUTH_JWT_SECRET: SECRET }

test.each([
  [
    'on the embedded store',
    { DATA_DIR: dataDir, DATABASE_READ_URLS: POSTGRES_ADMIN_URL },
    'DATABASE_READ_URLS',
  ],
  [
    'not a list of URLs',
    { ...onPostgres, DATABASE_READ_URLS: `${POSTGRES_ADMIN_URL};${POSTGRES_ADMIN_URL}` },
    'DATABASE_READ_URLS',
  ],
  [
    'not postgres://',
    { ...onPostgres, DATABASE_READ_URLS: 'http://127.0.0.1:5432/db' },
    'DATABASE_READ_URLS',
  ],
  [
    'a negative wait',
    { ...onPostgres, DATABASE_READ_URLS: POSTGRES_ADMIN_URL, READ_WAIT_MS: '-5' },
    'READ_WAIT_MS',
  ],
  [
    'no replica count',
    { ...onPostgres, EVENTS_NATS_URL: 'nats://127.0.0.1:4222', EVENTS_NATS_REPLICAS: 'x' },
    'EVENTS_NATS_REPLICAS',
  ],
])(
  '%s: the start stops naming %s',
  async (_case, env, variable) => {
    const { stderr, exitCode } = await runServerToExit(env)
    expect(exitCode).toBe(2)
    expect(stderr).toContain('plant store cannot start')
    expect(stderr).toContain(variable)
    // the URL's credentials are never echoed
    expect(stderr).not.toContain('postgres@')
  },
  30_000,
)

test('more stream replicas than a single NATS server can keep stops the start naming EVENTS_NATS_REPLICAS', async () => {
  const feed = await createTestFeed('replicas')
  try {
    const { stderr, exitCode } = await runServerToExit({
      ...onPostgres,
      ...feed.env,
      EVENTS_NATS_REPLICAS: '3',
    })
    expect(exitCode).toBe(2)
    expect(stderr).toContain('EVENTS_NATS_REPLICAS')
    expect(await feed.read()).toEqual([])
  } finally {
    await feed.drop()
  }
}, 30_000)
