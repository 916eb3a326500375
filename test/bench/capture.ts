import { drizzle } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import { createPlant } from '../../src/plants/create-plant.ts'
import { listPlants } from '../../src/plants/list-plants.ts'
import type { Database } from '../../src/store/database.ts'

// A statement as the service sent it. `wave` groups statements sent together before any answer
// came back (pipelined); waves run one after the other.
export type Statement = { query: string; parameters: unknown[]; wave: number }

// Markers in the captured parameters that a replay swaps for its own owner and id.
export const CAPTURED_OWNER = 'captured~owner'
export const CAPTURED_ID = 987654321987n

// Runs the service's own create and page functions once, with postgres.js reporting every
// statement: the SQL ceiling replays exactly these, whatever the service issues today.
export async function captureStatements(url: string) {
  let recording: Statement[] | undefined
  let wave = 0
  let waveOpen = false
  const client = postgres(url, {
    max: 1,
    onnotice: () => {},
    debug: (_connection, query, parameters) => {
      if (!recording) return
      if (!waveOpen) {
        wave++
        waveOpen = true
        setImmediate(() => {
          waveOpen = false
        })
      }
      recording.push({ query, parameters: [...parameters], wave })
    },
  })
  const db = drizzle({ client }) as unknown as Database
  const record = async (warmUp: () => Promise<unknown>, run: () => Promise<unknown>) => {
    await warmUp() // the run after it shows the steady state: statements already prepared
    recording = []
    wave = 0
    await run()
    const statements = recording
    recording = undefined
    return statements
  }
  const create = (owner: string, id: bigint) => () =>
    createPlant(
      db,
      { type: 'CreatePlant', owner, plant: { id, name: `plant ${id}`, tag: 'bench' }, now: new Date() },
      'captured~request',
    )
  const createStatements = await record(create('captured~warmup', 1n), create(CAPTURED_OWNER, CAPTURED_ID))
  const page = () => listPlants(db, { owner: CAPTURED_OWNER, limit: 20 })
  const pageStatements = await record(page, page)
  await client.end()
  return { create: createStatements, page: pageStatements }
}
