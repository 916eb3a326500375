import { afterAll, expect, test } from 'bun:test'
import { Buffer } from 'node:buffer'
import { randomBytes } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import postgres from 'postgres'
import { unwrapOwnerKey } from '../../src/crypto/envelope.ts'
import { denoServerCommand } from '../support/deno.ts'
import { postPlant } from '../support/plant-client.ts'
import { countInProcessMemory } from '../support/process-memory.ts'
import { startService } from '../support/service.ts'

// What another process of root's could read of the server's memory (/proc/<pid>/mem), searched
// for the raw bytes of an owner's key: present while the owner creates, gone within a second of
// their erasure, though the erasure ran in another process (the CLI) that the server never hears
// from, and requests of other owners kept coming.
const cleanups: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})

const kek = randomBytes(32)

test("given an owner's key in use by the server, when the owner is erased by the CLI, then within a second the server's memory holds no copy of it", async () => {
  // given: ada creating plants on a real server, her raw key unwrapped here from the stored row
  const service = await startService({
    label: 'keys_in_memory',
    env: { KEY_ENCRYPTION_KEYS: kek.toString('base64') },
  })
  cleanups.push(service.stop)
  const pid = service.server.process.pid
  const ada = await service.tokenFor('ada')
  const bob = await service.tokenFor('bob')
  let id = 0
  expect((await postPlant(service.url, ada, { id: ++id, name: 'Fern' })).status).toBe(200)
  const sql = postgres(String(service.databaseUrl), { max: 1, onnotice: () => {} })
  cleanups.push(async () => void (await sql.end()))
  const [row] = await sql<{ pseudonym: string; key: Uint8Array }[]>`
    select pseudonym, key from owner_keys where owner = 'ada'`
  const raw = unwrapOwnerKey(new Uint8Array(row?.key ?? []), [kek], row?.pseudonym ?? '')
  if ('missing' in raw) throw new Error("ada's key is not under the test KEK")
  const adaKey = Buffer.from(raw)
  raw.fill(0)
  // Creates keep coming while the memory is read, so that the key is in use throughout.
  const creating = (token: string) => {
    let stopped = false
    const done = (async () => {
      while (!stopped) await postPlant(service.url, token, { id: ++id, name: `plant ${id}` })
    })()
    return async () => {
      stopped = true
      await done
    }
  }
  const stopAda = creating(ada)
  const [inUse] = await countInProcessMemory(pid, [adaKey])
  await stopAda()
  // (the search finds what it looks for: ada's key is there while she creates)
  expect(inUse).toBeGreaterThan(0)

  // when: ada is erased by the CLI while bob keeps creating
  const stopBob = creating(bob)
  const erased = await service.cli(['owners', 'erase', 'ada'])
  expect(erased.exitCode).toBe(0)
  await Bun.sleep(1_000)
  // then: a second later not one copy of ada's key is left in the server's memory
  const [left, keks] = await countInProcessMemory(pid, [adaKey, kek])
  await stopBob()
  expect(left).toBe(0)
  // and the key-encryption key is held once, in the keyring's buffer
  expect(keks).toBe(1)
}, 120_000)

for (const [runtime, command] of [
  ['Bun', undefined],
  ['Deno, with the permissions the docs give it', denoServerCommand()],
] as const) {
  test(`given a server running on ${runtime}, when its limits are read, then it can write no core dump`, async () => {
    const service = await startService({ label: 'no_core_dumps', command })
    cleanups.push(service.stop)
    const limits = await readFile(`/proc/${service.server.process.pid}/limits`, 'utf8')
    expect(limits).toMatch(/^Max core file size\s+0\s+0\s+bytes/m)
  }, 60_000)
}
