import { afterAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createKeyring } from '../../src/crypto/keyring.ts'
import { seedSealed } from '../support/sealed-seed.ts'
import { type Env, runCli, startCli } from '../support/server-process.ts'
import { startService } from '../support/service.ts'
import { TEST_KEYS } from '../support/test-keys.ts'
import { HEADER, keyLine, sealedLine, testKey } from './sealed-lines.ts'

const cleanups: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const cleanup of cleanups) await cleanup()
})

// The commands alone, on a store no server has opened.
async function postgresEnv(): Promise<{ env: Env; url: string }> {
  const storage = await startService({ label: 'import_cli', instances: 0 })
  cleanups.push(storage.stop)
  return { env: storage.env, url: String(storage.databaseUrl) }
}

async function embeddedEnv(): Promise<Env> {
  const storage = await startService({ storage: 'embedded', secret: null, label: 'import-cli', instances: 0 })
  cleanups.push(storage.stop)
  return storage.env
}

// An export of one owner's plant (the header, the key on line 2, the event on line 3), and a
// hostile event of the same owner, sealed with its key.
const ada = testKey('ada')
const GOOD = [HEADER, keyLine(ada), await sealedLine(ada, { id: '1', position: '1' })].join('\n')
const HOSTILE = await sealedLine(ada, { id: '2', position: '2', tag: 'a\u0000' })

for (const [kind, environment] of [
  ['PostgreSQL', async () => (await postgresEnv()).env],
  ['the embedded store', embeddedEnv],
] as const) {
  test(`on ${kind}, a hostile file exits 1 with one line naming the line and the rule, and the store still verifies`, async () => {
    const env = await environment()
    const refused = await runCli(['events', 'import'], env, `${GOOD}\n${HOSTILE}\n`)
    expect(refused.exitCode).toBe(1)
    expect(refused.stderr).toBe(
      'import refused, nothing was imported: line 4: /data/tag: text must be well-formed Unicode (no lone surrogate) without U+0000\n',
    )
    // (the embedded store takes a while to open under load; its empty-file case is in the int test)
    if (kind === 'PostgreSQL') {
      const empty = await runCli(['events', 'import'], env, '')
      expect(empty.exitCode).toBe(1)
      expect(empty.stderr).toStartWith('import refused, nothing was imported: the input holds no events')
    }
    const imported = await runCli(['events', 'import'], env, `${GOOD}\n`)
    expect(imported).toMatchObject({ exitCode: 0, stderr: 'imported 1 events, each with its plant\n' })
    if (kind === 'PostgreSQL') expect((await runCli(['projection', 'verify'], env)).exitCode).toBe(0)
  }, 400_000)
}

test('a rebuild killed half-way leaves a table that status shows and the next rebuild drops', async () => {
  // given: a log long enough for a rebuild to be caught in the middle
  const { env, url } = await postgresEnv()
  expect((await runCli(['db', 'migrate'], env)).exitCode).toBe(0)
  // Two connections: the seed reads its source through a cursor on one and writes on the other.
  const sql = postgres(url, { max: 2, onnotice: () => {} })
  try {
    await seedSealed(
      sql,
      createKeyring(TEST_KEYS),
      "select 'seed' as owner, n::bigint as id, 'seed ' || n as name, null::text as tag from generate_series(1, 200000) as n",
      { project: false },
    )
    // when: the rebuild is killed once its table exists
    const rebuild = startCli(['projection', 'rebuild'], env)
    for (let waited = 0; waited < 60_000; waited += 20) {
      const [found] =
        await sql`select count(*)::int as n from pg_class where relname like 'plants\\_rebuild\\_%'`
      if (found?.n) break
      await Bun.sleep(20)
    }
    rebuild.kill('SIGKILL')
    await rebuild.exited
    // then status shows what it left, and the next rebuild drops it
    const status = await runCli(['projection', 'status'], env)
    expect(status.stdout).toMatch(
      /left over: plants_rebuild_\w+ \([\d.]+ MB\) of a rebuild or import that died/,
    )
    expect((await runCli(['projection', 'rebuild'], env)).exitCode).toBe(0)
    expect((await runCli(['projection', 'status'], env)).stdout).not.toContain('left over')
    expect((await runCli(['projection', 'verify'], env)).exitCode).toBe(0)
  } finally {
    await sql.end()
  }
}, 240_000)
