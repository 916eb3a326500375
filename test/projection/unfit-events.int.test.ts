import { afterAll, expect, test } from 'bun:test'
import { Buffer } from 'node:buffer'
import { createCipheriv, randomBytes } from 'node:crypto'
import { sql } from 'drizzle-orm'
import { streamIdOf } from '../../src/crypto/sealing.ts'
import { rowsOf } from '../../src/database/database.ts'
import type { UnfitEvent } from '../../src/event-log/sealed-parts.ts'
import { rebuildProjection } from '../../src/projection/rebuild-projection.ts'
import { isInSync, verifyProjection } from '../../src/projection/verify-projection.ts'
import { listing, openTestStorage, type TestStorage } from '../support/storage.ts'

// A text sealed in the earlier form, bound to its part's name alone, as the previous version wrote it.
function sealedEarlier(text: string, key: Uint8Array, part: 'data' | 'metadata'): { gcm: string } {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, iv).setAAD(Buffer.from(part))
  const body = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()])
  return { gcm: Buffer.concat([iv, body, cipher.getAuthTag()]).toString('base64') }
}

const opened: TestStorage[] = []
afterAll(() => Promise.all(opened.map((storage) => storage.close())))

test("given an event of the earlier form and its copy under another stream, when the log is folded, then the copy is named by its position as not its stream's and the original folds", async () => {
  // given: olivia's plant 5 sealed in the earlier form at its own stream, projected, and a copy of it
  const storage = await openTestStorage('postgres')
  opened.push(storage)
  const { pseudonym, wrapped, ...made } = storage.keyring.make()
  const raw = new Uint8Array(made.raw)
  await storage.db.execute(
    sql`insert into owner_keys (pseudonym, owner, key) values (${pseudonym}, 'olivia', ${wrapped})`,
  )
  const data = sealedEarlier('{"id": "5", "name": "Palm", "tag": null}', raw, 'data')
  const metadata = { pseudonym, ...sealedEarlier('{"requestId": "r"}', raw, 'metadata') }
  const insert = (streamId: string) =>
    storage.db.execute(sql`
      insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
      values (${streamId}, 1, 'PlantCreated', 1, ${JSON.stringify(data)}::jsonb, ${JSON.stringify(metadata)}::jsonb, now())
      returning position::text as position`)
  const [original] = rowsOf<{ position: string }>(await insert(streamIdOf(5n, raw)))
  await storage.db.execute(
    sql`insert into plants (owner, id, name, tag, position) values ('olivia', 5, 'Palm', null, ${original?.position})`,
  )
  const [copy] = rowsOf<{ position: string }>(await insert(`plant:${'d'.repeat(64)}`))

  // when: the projection is verified and rebuilt
  const named: UnfitEvent[] = []
  const verified = await verifyProjection(storage.db, storage.keyring, {
    onUnfit: (event) => named.push(event),
  })
  await rebuildProjection(storage.db, storage.keyring, { onUnfit: (event) => named.push(event) })

  // then: each names the copy alone, by its position; the original is olivia's plant, once
  expect(verified.unfit).toBe(1)
  expect(isInSync(verified.diff)).toBe(true)
  expect(named.map((event) => [event.position, event.message])).toEqual(
    [1, 2].map(() => [
      BigInt(copy?.position ?? 0),
      `the event at position ${copy?.position} holds a plant that is not its stream's`,
    ]),
  )
  expect((await listing(storage.db, 'olivia')).map((plant) => plant.name)).toEqual(['Palm'])
})
