import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { create, SECRET, startReplicaServer, tokenFor } from '../replicas/replica-client.ts'
import { type PrimaryWithReplica, startPrimaryWithReplica } from '../support/postgres-replica.ts'
import { runCli } from '../support/server-process.ts'

// Failover (docs/operating.md): a multi-host DATABASE_URL writes only to the host that is the primary, whatever
// the order of the hosts, with libpq's `read-write` as with `primary`; the CLI accepts the same URL.
let pair: PrimaryWithReplica
// The standby listed first: the host postgres.js would try first.
let standbyFirst: string

beforeAll(async () => {
  pair = await startPrimaryWithReplica()
  const host = (url: string) => new URL(url).host
  standbyFirst = `postgres://postgres@${host(pair.replicaUrl)},${host(pair.primaryUrl)}/postgres`
}, 60_000)
afterAll(() => pair?.stop())

async function plantsOnPrimary(name: string): Promise<number> {
  const sql = postgres(pair.primaryUrl, { max: 1, onnotice: () => {} })
  try {
    const [row] = await sql`select count(*)::int as count from plants where name = ${name}`
    return row?.count ?? 0
  } finally {
    await sql.end()
  }
}

for (const attrs of ['read-write', 'primary']) {
  test(`target_session_attrs=${attrs}, the standby listed first: the service and the CLI write to the primary`, async () => {
    // given the service started with the standby first in its URL
    const url = `${standbyFirst}?target_session_attrs=${attrs}`
    const server = await startReplicaServer({ DATABASE_URL: url })
    try {
      // when a plant is created, more times than the pool has connections
      const token = await tokenFor(`owner-${attrs}`)
      for (let id = 1; id <= 10; id++) await create(server.url, token, id, `${attrs} ${id}`)
      // then every one is on the primary
      for (let id = 1; id <= 10; id++) expect(await plantsOnPrimary(`${attrs} ${id}`)).toBe(1)
    } finally {
      await server.stop()
    }
    // and the CLI's writes with the same URL reach it too
    const rebuilt = await runCli(['projection', 'rebuild'], { DATABASE_URL: url, AUTH_JWT_SECRET: SECRET })
    expect(rebuilt.stderr).not.toContain('read-only')
    expect(rebuilt.exitCode).toBe(0)
    expect(await plantsOnPrimary(`${attrs} 10`)).toBe(1)
  }, 60_000)
}

test('a target_session_attrs libpq does not know stops the start naming DATABASE_URL', async () => {
  const { stderr, exitCode } = await runCli(['projection', 'status'], {
    DATABASE_URL: `${standbyFirst}?target_session_attrs=writable`,
    AUTH_JWT_SECRET: SECRET,
  })
  expect(exitCode).not.toBe(0)
  expect(stderr).toContain('DATABASE_URL')
  expect(stderr).toContain('target_session_attrs')
})

// src/database/target-session-attrs.ts hands `read-write` to postgres.js as `primary` because
// postgres.js 3.4.9 takes a PostgreSQL 14+ standby for read-write. When this fails, postgres.js
// skips the standby by itself, and the mapping can go.
test('upstream: postgres.js alone takes a standby listed first for read-write', async () => {
  const sql = postgres(`${standbyFirst}?target_session_attrs=read-write`, { max: 1, onnotice: () => {} })
  try {
    const [row] = await sql`select pg_is_in_recovery() as standby`
    expect(row?.standby).toBe(true)
  } finally {
    await sql.end()
  }
})
