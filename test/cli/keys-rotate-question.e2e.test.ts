import { afterAll, beforeAll, beforeEach, expect, test } from 'bun:test'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { keyEncryptionKeyId, parseKeyEncryptionKeys } from '../../src/crypto/key-encryption-keys.ts'
import { startEmbeddedDefault } from '../support/embedded-default.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import { CLI_COMMAND, childEnv, runCli } from '../support/server-process.ts'
import type { ServiceStorage } from '../support/service.ts'

// `keys rotate` on the embedded default drops its generated key-encryption key, the only copy of
// the key exports taken before then restore with: on a terminal it asks first (a real
// pseudo-terminal, util-linux `script`), a script says `--yes`, and a script that does not keeps
// the key. Its stdout holds its result alone.
const ROOT = new URL('../..', import.meta.url).pathname

// One store for the tests, each of which rotates its keys again: `before` is what DATA_DIR held as
// each began.
let store: ServiceStorage
let owner: string
let before: string
beforeAll(async () => {
  store = await startEmbeddedDefault('keys-question')
  const server = await store.startAnother()
  owner = (await runCli(['token', 'issue', 'ida'], store.env)).stdout.trim()
  expect((await postPlant(server.url, owner, { id: 1, name: 'Aloe' })).status).toBe(200)
  await server.stop()
}, 120_000)
beforeEach(async () => {
  before = await keysFile()
})
afterAll(() => store?.stop())

const keysFile = () => readFile(join(String(store.dataDir), 'key-encryption-keys'), 'utf8')
const idsOf = (text: string) => {
  const keys = parseKeyEncryptionKeys(text)
  if (typeof keys === 'string') throw new Error(keys)
  return keys.map(keyEncryptionKeyId)
}

// `keys rotate` with a pseudo-terminal for its stdin, stdout and stderr, `answer` typed at it.
async function onTerminal(args: string[], answer: string) {
  const child = Bun.spawn(
    ['script', '-qec', [...CLI_COMMAND, 'keys', 'rotate', ...args].join(' '), '/dev/null'],
    {
      cwd: ROOT,
      env: childEnv(store.env),
      stdin: new TextEncoder().encode(answer),
      stdout: 'pipe',
      stderr: 'pipe',
    },
  )
  const [terminal, exitCode] = await Promise.all([new Response(child.stdout).text(), child.exited])
  return { terminal, exitCode }
}

test('on a terminal, answered no, it asks before dropping the key, naming it, and keeps it', async () => {
  // given the generated key
  const old = idsOf(before).join(', ')
  // when keys rotate runs on a terminal and the answer is no
  const { terminal, exitCode } = await onTerminal([], 'n\n')
  // then it asked, naming the key, and the key is still in DATA_DIR, after the new one
  expect(exitCode).toBe(0)
  expect(terminal).toContain(`drop key-encryption key ${old} from`)
  expect(terminal).toContain('[y/N]')
  const after = idsOf(await keysFile())
  expect(after.slice(1)).toEqual(idsOf(before))
  expect(terminal).toContain(`kept key-encryption key ${old}`)
  // and the store opens with the new key first
  expect((await runCli(['projection', 'verify'], store.env)).exitCode).toBe(0)
}, 60_000)

test('on a terminal, answered yes, it drops the keys it asked about', async () => {
  // given the keys kept by the answer above
  const old = idsOf(before)
  expect(old).toHaveLength(2)
  // when
  const { terminal, exitCode } = await onTerminal([], 'y\n')
  // then
  expect(exitCode).toBe(0)
  expect(terminal).toContain(`drop key-encryption keys ${old.join(', ')} from`)
  const after = idsOf(await keysFile())
  expect(after).toHaveLength(1)
  expect(old).not.toContain(after[0] as string)
}, 60_000)

test('a script that says --yes is not asked, and the key is dropped; stdout holds the result line alone', async () => {
  const [old] = idsOf(before)
  // when
  const rotated = await runCli(['keys', 'rotate', '--yes'], store.env)
  // then
  expect(rotated.exitCode).toBe(0)
  expect(rotated.stderr).not.toContain('[y/N]')
  const [now] = idsOf(await keysFile())
  expect(rotated.stdout).toBe(
    `every owner's key is wrapped under key-encryption key ${now} (1 re-wrapped, 0 already were); dropped from DATA_DIR: ${old}, under which nothing is wrapped any more\n`,
  )
  const server = await store.startAnother()
  try {
    expect(await listEveryPlant(server.url, owner)).toEqual([{ name: 'Aloe' }])
  } finally {
    await server.stop()
  }
}, 60_000)

test('a script that does not say --yes keeps the key, and says how to drop it', async () => {
  const [old] = idsOf(before)
  const rotated = await runCli(['keys', 'rotate'], store.env)
  expect(rotated.exitCode).toBe(0)
  expect(idsOf(await keysFile())).toContain(old as string)
  expect(rotated.stderr).toContain(`kept key-encryption key ${old}`)
  expect(rotated.stderr).toContain('--yes')
}, 60_000)
