import { drizzle } from 'drizzle-orm/postgres-js'
import postgres from 'postgres'
import { createPlant } from '../../src/plants/create-plant.ts'
import { listPlants } from '../../src/plants/list-plants.ts'
import type { Database } from '../../src/store/database.ts'

// A statement as the service sent it. `wave` groups statements sent together before any answer
// came back (pipelined); waves run one after the other.
// `prepared` tells whether the driver sent it as a named prepared statement (one round trip once
// prepared) or unnamed (parse and describe first, then bind and execute: two round trips).
export type Statement = { query: string; parameters: unknown[]; wave: number; prepared: boolean }

// Markers in the captured parameters that a replay swaps for its own owner and id. The owner is
// new in every capture: a plant that exists already would capture a retry, which appends nothing.
export const CAPTURED_ID = 987654321987n

// Runs the service's own create and page functions once, with postgres.js reporting every
// statement: the SQL ceiling replays exactly these, whatever the service issues today.
export async function captureStatements(url: string) {
  const capturedOwner = `captured~${crypto.randomUUID()}`
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
      recording.push({ query, parameters: [...parameters], wave, prepared: false })
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
  const createStatements = await record(
    create(`${capturedOwner}~warm-up`, 1n),
    create(capturedOwner, CAPTURED_ID),
  )
  const page = () => listPlants(db, { owner: capturedOwner, limit: 20 })
  const pageStatements = await record(page, page)
  // One connection: what it holds prepared is what the service prepares.
  const prepared = new Set(
    (await client.unsafe('select statement from pg_prepared_statements')).map((row) => String(row.statement)),
  )
  await client.end()
  for (const statement of [...createStatements, ...pageStatements])
    statement.prepared = prepared.has(statement.query)
  return { owner: capturedOwner, create: createStatements, page: pageStatements }
}
