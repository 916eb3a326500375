import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { Buffer } from 'node:buffer'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { WRAPPED_KEY_BYTES } from '../../src/crypto/envelope.ts'
import { expectCliSucceeded } from '../support/cli-assertions.ts'
import { listEveryPlant } from '../support/plant-client.ts'
import { type Env, runCli, type ServerProcess } from '../support/server-process.ts'
import { type ServiceStorage, startService } from '../support/service.ts'
import { TEST_KEY_ENCRYPTION_KEYS } from '../support/test-keys.ts'
import {
  EARLIER_STORES,
  type EarlierOwner,
  listed,
  postExactly,
  restoreEarlierPostgres,
  unpackEarlierDataDir,
} from './fixtures/earlier-stores.ts'
import { type OpenedPlant, parsedKeys, readExport } from './fixtures/opened-export.ts'

// A store written by the version that sealed in the database (test/keys/fixtures/), started on this
// one as it is: nothing lost, every event opening exactly, and a rotation and an erasure on it.

type Kind = 'postgres' | 'embedded'

const NEW_KEK = Buffer.from(crypto.getRandomValues(new Uint8Array(32))).toString('base64')

for (const kind of ['postgres', 'embedded'] as const) {
  describe(`the earlier ${kind} store`, () => {
    let storage: ServiceStorage
    let server: ServerProcess
    // The key-encryption keys of the store: the test key on PostgreSQL, DATA_DIR's own embedded.
    let keks = TEST_KEY_ENCRYPTION_KEYS
    let env: Env = {}
    beforeAll(async () => {
      storage = await startEarlierStore(kind)
      if (kind === 'embedded')
        keks = (await readFile(join(String(storage.dataDir), 'key-encryption-keys'), 'utf8')).trim()
      else env = { KEY_ENCRYPTION_KEYS: keks }
      server = await storage.startAnother(env)
    })
    afterAll(() => storage?.stop())

    const cliWith = async (args: string[], more: Env) => {
      const run = await runCli(args, { ...storage.env, ...env, ...more })
      expectCliSucceeded(args, run)
      return run.stdout
    }
    const listings = async (owners: EarlierOwner[]) =>
      Promise.all(owners.map(async (owner) => listEveryPlant(server.url, await storage.tokenFor(owner.sub))))

    test('given the earlier store, when the new version serves it, then every owner lists exactly what was written and the erased owner nothing', async () => {
      const { owners, erased } = EARLIER_STORES
      expect(await listings([...owners, erased])).toEqual([
        ...owners.map((owner) => owner.plants.map(listed)),
        [],
      ])
    })

    test('given the earlier store, when it is exported, then every event opens exactly, the traced one with its traceparent', async () => {
      const exported = readExport(await cliWith(['events', 'export'], {}), parsedKeys(keks))
      // The earlier version kept a traceparent on every create while tracing was on, sampled or not.
      const withoutTrace = ({ traceparent, ...plant }: OpenedPlant) => plant
      for (const owner of EARLIER_STORES.owners) {
        expect(exported.plants.get(owner.sub)?.map(withoutTrace)).toEqual(
          owner.plants.map((plant) => ({ id: plant.id, name: plant.name, tag: plant.tag ?? null })),
        )
      }
      const traced = EARLIER_STORES.owners.flatMap((owner) =>
        owner.plants
          .filter((plant) => plant.traceparent)
          .map((plant) => ({ owner: owner.sub, id: plant.id })),
      )
      const traceId = EARLIER_STORES.traceparent.split('-')[1]
      for (const { owner, id } of traced) {
        expect(exported.plants.get(owner)?.find((plant) => plant.id === id)?.traceparent).toContain(
          `-${traceId}-`,
        )
      }
      expect(exported.plants.has(EARLIER_STORES.erased.sub)).toBe(false)
    })

    test('given an old plant, when it is posted again, then the same is 200 with nothing appended, another name 409, and its owner creates a new one', async () => {
      const [owner] = EARLIER_STORES.owners
      const plant = owner?.plants.at(-1)
      if (!owner || !plant) throw new Error('the earlier store has no plant')
      const token = await storage.tokenFor(owner.sub)
      const events = async () =>
        (await cliWith(['events', 'export'], {})).split('\n').filter((line) => line !== '').length
      const before = await events()
      expect((await postExactly(server.url, token, plant)).status).toBe(200)
      expect((await postExactly(server.url, token, { ...plant, name: 'another name' })).status).toBe(409)
      expect(await events()).toBe(before)
      expect(await listEveryPlant(server.url, token)).toEqual(owner.plants.map(listed))
      expect((await postExactly(server.url, token, { id: '424242', name: 'new on an old key' })).status).toBe(
        200,
      )
      expect(await listEveryPlant(server.url, token)).toEqual([
        ...owner.plants.map(listed),
        { name: 'new on an old key' },
      ])
      await cliWith(['projection', 'verify'], {})
    })

    test('given the earlier store, when keys rotate runs, then every key is wrapped in the 64-byte form and the store still reads', async () => {
      await server.stop()
      // PostgreSQL: a new key first, the old one after it; embedded: DATA_DIR's key replaced.
      const rotated = kind === 'postgres' ? `${NEW_KEK},${keks}` : undefined
      await cliWith(['keys', 'rotate', '--yes'], rotated ? { KEY_ENCRYPTION_KEYS: rotated } : {})
      if (rotated) env = { KEY_ENCRYPTION_KEYS: NEW_KEK }
      else keks = (await readFile(join(String(storage.dataDir), 'key-encryption-keys'), 'utf8')).trim()
      server = await storage.startAnother(env)
      const exported = readExport(
        await cliWith(['events', 'export'], {}),
        parsedKeys(env.KEY_ENCRYPTION_KEYS ?? keks),
      )
      expect(exported.keys.map((key) => key.wrapped.byteLength)).toEqual(
        exported.keys.map(() => WRAPPED_KEY_BYTES),
      )
      const [first, ...rest] = EARLIER_STORES.owners
      if (!first) throw new Error('the earlier store has no owner')
      expect(await listings(rest)).toEqual(rest.map((owner) => owner.plants.map(listed)))
      await cliWith(['projection', 'verify'], {})
    })

    test('given the earlier store, when an old owner is erased, then it lists nothing and the rest verifies', async () => {
      const [, owner] = EARLIER_STORES.owners
      if (!owner) throw new Error('the earlier store has two owners')
      if (kind === 'embedded') await server.stop()
      expect((await cliWith(['owners', 'erase', '--', owner.sub], {})).trim()).toBe(
        String(owner.plants.length),
      )
      if (kind === 'embedded') server = await storage.startAnother(env)
      expect(await listEveryPlant(server.url, await storage.tokenFor(owner.sub))).toEqual([])
      await cliWith(['projection', 'verify'], {})
    })
  })
}

async function startEarlierStore(kind: Kind): Promise<ServiceStorage> {
  if (kind === 'postgres') {
    const storage = await startService({ label: 'earlier_store', instances: 0 })
    restoreEarlierPostgres(String(storage.databaseUrl))
    return storage
  }
  const storage = await startService({
    label: 'earlier_store',
    storage: 'embedded',
    secret: null,
    instances: 0,
  })
  unpackEarlierDataDir(String(storage.dataDir))
  return storage
}
