import { afterAll, beforeAll, expect, test } from 'bun:test'
import { PGlite } from '@electric-sql/pglite'
import { keepTextExact } from '../../src/store/exact-text.ts'

// exact-text.ts patches PGlite because its protocol reader decodes every value with a default
// TextDecoder, which drops a leading U+FEFF. The first test watches upstream: when it fails,
// PGlite keeps the character itself and exact-text.ts can go.
const WITH_BOM = '\uFEFFfern'
const QUERY = `select chr(65279) || 'fern' as text, length(chr(65279) || 'fern') as characters`

let plain: PGlite
let patched: PGlite
beforeAll(async () => {
  // Creating a PGlite compiles its WebAssembly and runs initdb: seconds each.
  ;[plain, patched] = await Promise.all([PGlite.create(), PGlite.create().then(keepTextExact)])
}, 60_000)
afterAll(async () => {
  await plain.close()
  await patched.close()
})

test('upstream PGlite still drops a leading U+FEFF the database holds (delete exact-text.ts when this fails)', async () => {
  const { rows } = await plain.query<{ text: string; characters: number }>(QUERY)
  expect(rows).toEqual([{ text: 'fern', characters: 5 }])
})

test('the patched client gives the text back as stored, in queries, transactions and errors alike', async () => {
  const { rows } = await patched.query<{ text: string }>(QUERY)
  expect(rows[0]?.text).toBe(WITH_BOM)
  const inTransaction = await patched.transaction((tx) => tx.query<{ text: string }>(QUERY))
  expect(inTransaction.rows[0]?.text).toBe(WITH_BOM)
  await expect(patched.query('select 1/0')).rejects.toThrow('division by zero')
})
