import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createKeyring } from '../../src/crypto/keyring.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { seedSealed } from '../support/sealed-seed.ts'
import { type Service, startService } from '../support/service.ts'
import { TEST_KEYS } from '../support/test-keys.ts'

const SEEDED = 100_000
const WRITERS = 4

let service: Service
beforeAll(async () => {
  service = await startService({ label: 'rebuild_load' })
  // A log long enough for the rebuild to take a while; the projection is left to the rebuild.
  // Two connections: the seed reads its source through a cursor on one and writes on the other.
  const sql = postgres(String(service.databaseUrl), { max: 2, onnotice: () => {} })
  await seedSealed(
    sql,
    createKeyring(TEST_KEYS),
    `select 'seed' as owner, n::bigint as id, 'seed ' || n as name, null::text as tag
     from generate_series(1, ${SEEDED}) as n`,
    { project: false },
  )
  await sql.end()
})
afterAll(async () => {
  await service?.stop()
})

async function tokenFor(subject: string): Promise<string> {
  const { stdout, exitCode } = await service.cli(['token', 'issue', subject])
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
      const response = await fetch(`${service.url}/plants`, {
        method: 'POST',
        headers: { ...tokenHeader(token), 'content-type': 'application/json' },
        body: JSON.stringify({ id, name: `plant ${id}` }),
      })
      if (response.status !== 200)
        throw new Error(`write failed: ${response.status} ${await response.text()}`)
      acknowledged[w]?.push(id)
      if (rebuilding) duringRebuild++
    }
  })
  // when
  const rebuild = await service.cli(['projection', 'rebuild'])
  rebuilding = false
  await Promise.all(writers)
  // then
  expect(rebuild.exitCode).toBe(0)
  expect(rebuild.stdout).toContain('rebuilt plants:')
  expect(duringRebuild).toBeGreaterThan(0)
  for (const [w, token] of tokens.entries()) {
    const response = await fetch(`${service.url}/plants`, { headers: tokenHeader(token) })
    const names = ((await response.json()) as { name: string }[]).map((plant) => plant.name)
    expect(names).toEqual((acknowledged[w] ?? []).map((id) => `plant ${id}`))
  }
  const verify = await service.cli(['projection', 'verify'])
  expect(verify.stdout).toContain('matches')
  expect(verify.exitCode).toBe(0)
  const status = await service.cli(['projection', 'status'])
  expect(status.stdout).toContain('up to date')
}, 120_000)
