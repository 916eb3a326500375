import { afterAll, beforeAll, expect, test } from 'bun:test'
import { Buffer } from 'node:buffer'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import { runCli } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'

// A rotation's write of DATA_DIR's key-encryption keys, killed between any two of its steps,
// leaves a store that starts with all its owners: the file holds the old list or the new one,
// whole, and either opens every stored key.

const ROOT = new URL('../..', import.meta.url).pathname
const NEW = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')
const OWNERS = ['gus', 'hana']

let store: ServiceStorage
let tokens: string[] = []
beforeAll(async () => {
  store = await startService({ storage: 'embedded', secret: null, label: 'secret-kill', instances: 0 })
  const server = await store.startAnother()
  try {
    tokens = await Promise.all(
      OWNERS.map(async (owner) => (await runCli(['token', 'issue', owner], store.env)).stdout.trim()),
    )
    for (const [index, bearer] of tokens.entries()) {
      expect((await postPlant(server.url, bearer, { id: 1, name: `${OWNERS[index]}'s` })).status).toBe(200)
    }
  } finally {
    await server.stop()
  }
}, 120_000)
afterAll(() => store?.stop())

async function killedAt(step: number, keys: string): Promise<void> {
  const child = Bun.spawn(
    ['bun', 'test/support/stopped-secret-write.ts', String(store.dataDir), String(step), keys],
    {
      cwd: ROOT,
      stdout: 'pipe',
      stderr: 'inherit',
    },
  )
  const reader = child.stdout.getReader()
  const { value } = await reader.read()
  expect(new TextDecoder().decode(value)).toBe('stopped\n')
  child.kill('SIGKILL')
  await child.exited
}

for (const step of [1, 2, 3, 4]) {
  test(`given the rotation's first write of the KEK file, when the process is killed before step ${step}, then the store starts with all its owners`, async () => {
    // given
    const file = join(String(store.dataDir), 'key-encryption-keys')
    const generated = (await readFile(file, 'utf8')).trim().split(',').at(-1) ?? ''
    // when
    await killedAt(step, `${NEW},${generated}`)
    // then
    const held = (await readFile(file, 'utf8')).trim()
    expect([generated, `${NEW},${generated}`]).toContain(held)
    const server = await store.startAnother()
    try {
      for (const [index, bearer] of tokens.entries()) {
        expect(await listEveryPlant(server.url, bearer)).toEqual([{ name: `${OWNERS[index]}'s` }])
      }
      // and no copy of a key list the killed write made first is left in DATA_DIR
      expect((await readdir(String(store.dataDir))).filter((name) => name.endsWith('.tmp'))).toEqual([])
    } finally {
      await server.stop()
    }
  }, 60_000)
}
