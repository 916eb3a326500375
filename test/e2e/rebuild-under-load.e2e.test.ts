import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { keysParameter } from '../../src/store/database.ts'
import { createTestDatabase, type TestDatabase } from '../support/postgres.ts'
import { sealedSeed } from '../support/sealed-seed.ts'
import { runCli, type ServerProcess, startServer } from '../support/server-process.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

const SEEDED = 100_000
const WRITERS = 4

let database: TestDatabase
let server: ServerProcess
let env: Record<string, string>
beforeAll(async () => {
  database = await createTestDatabase('rebuild_load')
  env = { DATABASE_URL: database.url, AUTH_JWT_SECRET: 'e2e-secret-that-is-at-least-32-bytes-long' }
  server = await startServer(env)
  // A log long enough for the rebuild to take a while; the projection is left to the rebuild.
  const sql = postgres(database.url, { max: 1, onnotice: () => {}, connection: keysParameter(TEST_KEYS) })
  await sql.unsafe(
    sealedSeed(
      `select 'seed' as owner, n::bigint as id, 'seed ' || n as name, null::text as tag
       from generate_series(1, ${SEEDED}) as n`,
      { project: false },
    ),
  )
  await sql.end()
})
afterAll(async () => {
  await server?.stop()
  await database.drop()
})

async function tokenFor(subject: string): Promise<string> {
  const { stdout, exitCode } = await runCli(['token', 'issue', subject], env)
  if (exitCode !== 0) throw new Error('token issue failed')
  return stdout.trim()
}

test('a rebuild while the server takes writes loses none of them, and verify agrees afterwards', async () => {
  // given: writers posting plants as fast as the server answers
  const tokens = await Promise.all(Array.from({ length: WRITERS }, (_, w) => tokenFor(`writer-${w}`)))
  let rebuilding = true
  let duringRebuild = 0
  const acknowledged: number[][] = tokens.map(() => [])
  const writers = tokens.map(async (token, w) => {
    for (let id = 1; rebuilding || id <= 20; id++) {
      const response = await fetch(`${server.url}/plants`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ id, name: `plant ${id}` }),
      })
      if (response.status !== 200)
        throw new Error(`write failed: ${response.status} ${await response.text()}`)
      acknowledged[w]?.push(id)
      if (rebuilding) duringRebuild++
    }
  })
  // when
  const rebuild = await runCli(['projection', 'rebuild'], env)
  rebuilding = false
  await Promise.all(writers)
  // then
  expect(rebuild.exitCode).toBe(0)
  expect(rebuild.stdout).toContain('rebuilt plants:')
  expect(rebuild.stderr).toContain('rebuild: ')
  expect(duringRebuild).toBeGreaterThan(0)
  for (const [w, token] of tokens.entries()) {
    const response = await fetch(`${server.url}/plants`, { headers: { authorization: `Bearer ${token}` } })
    const names = ((await response.json()) as { name: string }[]).map((plant) => plant.name)
    expect(names).toEqual((acknowledged[w] ?? []).map((id) => `plant ${id}`))
  }
  const verify = await runCli(['projection', 'verify'], env)
  expect(verify.stdout).toContain('matches')
  expect(verify.exitCode).toBe(0)
  const status = await runCli(['projection', 'status'], env)
  expect(status.stdout).toContain('up to date')
}, 120_000)
