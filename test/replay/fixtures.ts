import type { Database } from '../../src/store/database.ts'
import { create, listing } from '../support/storage.ts'

// Plants that stress exactness: ids beyond 2^53 and at the int64 edges, text well outside
// ASCII (astral characters, combining marks, line separators, quotes and backslashes), and the
// three ways to have, or not have, a tag.
export const TRICKY_PLANTS: Record<string, { id: bigint; name: string; tag?: string | null }[]> = {
  alice: [
    { id: 9007199254740993n, name: 'Ficus' },
    { id: 9007199254740992n, name: 'Ficus twin', tag: null },
    { id: 9223372036854775807n, name: 'Max', tag: '' },
    { id: -9223372036854775808n, name: 'Min', tag: 'edge' },
  ],
  'bob 🌵 "b"': [
    { id: 7n, name: 'Kaktus 🌵 é 你好 😀', tag: 'ת"ג\\' },
    { id: 8n, name: '\u2028line\u2029sep', tag: '\t' },
  ],
}

export const TRICKY_PLANT_COUNT = Object.values(TRICKY_PLANTS).flat().length

export async function createTrickyPlants(db: Database): Promise<void> {
  for (const [owner, plants] of Object.entries(TRICKY_PLANTS)) {
    for (const plant of plants) await create(db, owner, plant)
  }
}

export async function listingsByOwner(db: Database): Promise<Record<string, unknown>> {
  const listings: Record<string, unknown> = {}
  for (const owner of Object.keys(TRICKY_PLANTS)) listings[owner] = await listing(db, owner)
  return listings
}
