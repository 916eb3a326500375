import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { sql } from 'drizzle-orm'
import { rowsOf } from '../../src/database/database.ts'
import { isInSync, verifyProjection } from '../../src/projection/verify-projection.ts'
import { exportEvents } from '../../src/transfer/export-events.ts'
import { base64Bytes, type ImportedOwnerKey, ownerKey } from '../../src/transfer/sealed-event.ts'
import { createHarness, type Harness, STORAGE_KINDS } from '../support/harness.ts'
import { withRawKeys } from '../support/test-keys.ts'

// The lines of an export this test reads: key lines, and events sealed under those keys.
type ExportLine = {
  key?: { pseudonym: string; key: string }
  streamId: string
  streamVersion: number
  data?: { gcm?: string; sealed?: string }
  metadata?: { pseudonym: string }
}

const BOM = '\uFEFF'
// Text a default TextDecoder would change: one and two leading byte order marks, and nothing else.
const PLANTS = [
  { id: 1, name: `${BOM}Monstera`, tag: `${BOM}tropical` },
  { id: 2, name: `${BOM}${BOM}Fern`, tag: `${BOM}${BOM}` },
  { id: 3, name: 'Palm', tag: BOM },
  { id: 4, name: BOM },
]
const expectedPlant = ({ name, tag }: { name: string; tag?: string }) =>
  tag === undefined ? { name } : { name, tag }
const utf8 = (text: string) => [...new TextEncoder().encode(text)]

// The API and the event log (docs/api.md, docs/operating.md): text comes back exactly as it was sent, on both storages, wherever the store
// hands it back.
for (const kind of STORAGE_KINDS) {
  describe(`text starting with U+FEFF on ${kind}`, () => {
    let h: Harness
    let token: string
    beforeAll(async () => {
      h = await createHarness(kind)
      token = await h.tokenFor('bom-owner')
      for (const plant of PLANTS) {
        const response = await h.request('POST', '/plants', { token, body: plant })
        expect(response.status).toBe(200)
        expect(await response.json()).toEqual(expectedPlant(plant))
      }
    })
    afterAll(() => h.close())

    test('the listing gives every name and tag back byte for byte', async () => {
      const response = await h.request('GET', '/plants', { token })
      const listed = (await response.json()) as { name: string; tag?: string }[]
      expect(
        listed.map((plant) => [utf8(plant.name), plant.tag === undefined ? null : utf8(plant.tag)]),
      ).toEqual(PLANTS.map((plant) => [utf8(plant.name), plant.tag === undefined ? null : utf8(plant.tag)]))
    })

    test('a page of the listing does too', async () => {
      const response = await h.request('GET', '/plants?limit=2', { token })
      expect(await response.json()).toEqual(PLANTS.slice(0, 2).map(expectedPlant))
    })

    test('a retry is still the same plant: 200 and nothing appended, not 409', async () => {
      const before = await h.countEvents()
      for (const plant of PLANTS) {
        const retry = await h.request('POST', '/plants', { token, body: plant })
        expect({ id: plant.id, status: retry.status }).toEqual({ id: plant.id, status: 200 })
        expect(await retry.json()).toEqual(expectedPlant(plant))
      }
      expect(await h.countEvents()).toBe(before)
    })

    test('a change is still a conflict: the name without its mark is another name', async () => {
      const changed = await h.request('POST', '/plants', {
        token,
        body: { id: 1, name: 'Monstera', tag: 'tropical' },
      })
      expect(changed.status).toBe(409)
    })

    test('projection verify folds the log into exactly the projected text', async () => {
      expect(isInSync((await verifyProjection(h.db, h.keyring)).diff)).toBe(true)
    })

    test('the export carries the text exactly', async () => {
      let wrapped = ''
      await exportEvents(h.db, async (chunk) => {
        wrapped += chunk
      })
      const text = withRawKeys(wrapped)
      // The events are sealed under their owner's key, which the export carries on a key line.
      const lines = text
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line) as ExportLine)
      const keys = new Map<string, ImportedOwnerKey>()
      for (const line of lines)
        if (line.key) keys.set(line.key.pseudonym, ownerKey(base64Bytes(line.key.key) ?? new Uint8Array()))
      const exported: { name: string; tag: string | null }[] = []
      for (const line of lines) {
        if (!line.data || !line.metadata) continue
        const opened = keys.get(line.metadata.pseudonym)?.open(line.data, 'data', line)
        exported.push(JSON.parse(opened?.text ?? 'null'))
      }
      expect(exported.map((data) => [utf8(data.name), data.tag === null ? null : utf8(data.tag)])).toEqual(
        PLANTS.map((plant) => [utf8(plant.name), plant.tag === undefined ? null : utf8(plant.tag)]),
      )
    })

    test('a value read straight from the store keeps its marks', async () => {
      const result = await h.db.execute(sql`select name, tag from plants order by id`)
      const rows = rowsOf<{ name: string; tag: string | null }>(result)
      expect(rows.map((row) => [utf8(row.name), row.tag === null ? null : utf8(row.tag)])).toEqual(
        PLANTS.map((plant) => [utf8(plant.name), plant.tag === undefined ? null : utf8(plant.tag)]),
      )
    })
  })
}
