import { expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { issueToken } from '../../src/auth/issue-token.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import { runCli, startServer } from '../support/server-process.ts'

const SECRET = 'in-memory-test-secret-of-32-bytes-or-more'
const env = { DATA_DIR: 'memory:', AUTH_JWT_SECRET: SECRET }
const token = () =>
  issueToken(new TextEncoder().encode(SECRET), { subject: 'suite', ttlSeconds: 600, now: new Date() })

test('DATA_DIR=memory: serves a store of its own per process, with no files, no lock, gone at exit', async () => {
  // given two servers on the in-memory store at once (no lock keeps the second out)
  const [first, second] = await Promise.all([startServer(env), startServer(env)])
  const bearer = await token()
  try {
    // when a plant is created on the first
    expect((await postPlant(first.url, bearer, { id: 1, name: 'Fern' })).status).toBe(200)
    // then only the first has it
    expect(await listEveryPlant(first.url, bearer)).toEqual([{ name: 'Fern' }])
    expect(await listEveryPlant(second.url, bearer)).toEqual([])
  } finally {
    expect(await first.stop('SIGTERM')).toBe(0)
    expect(await second.stop('SIGTERM')).toBe(0)
  }
  // and nothing was written where a data directory would be
  expect(existsSync(new URL('../../memory:', import.meta.url))).toBe(false)
  // and a new process starts empty
  const again = await startServer(env)
  try {
    expect(await listEveryPlant(again.url, bearer)).toEqual([])
  } finally {
    expect(await again.stop('SIGTERM')).toBe(0)
  }
}, 60_000)

test('the CLI refuses DATA_DIR=memory:, which only the server process can reach', async () => {
  const result = await runCli(['projection', 'verify'], env)
  expect(result.exitCode).toBe(2)
  expect(result.stderr).toContain('DATA_DIR=memory: lives inside the server process')
})
