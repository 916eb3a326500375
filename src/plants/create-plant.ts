import type { StoredKey } from '../crypto/keyring.ts'
import type { Database } from '../database/database.ts'
import {
  type CreatePlant,
  type Decision,
  decide,
  decodePlantEvent,
  encodePlantEvent,
  evolve,
  initialState,
  type PlantState,
} from '../domain/plant.ts'
import { type Appended, appendEvents, readPlantStream, type StreamAppend } from '../event-log/append.ts'
import type { OwnerKeyCache } from '../event-log/owner-keys.ts'
import { groupCommit } from '../shared/batching.ts'
import { isDatabaseUnavailable, postgresErrorCode } from '../shared/database-error.ts'
import { diskFull } from '../shared/disk-full.ts'
import { inSpan, type Tracing } from '../tracing/tracing.ts'

// A create's answer: the decision, and the position of the plant's event in the log (the new one,
// or the one already stored on a retry or a conflict).
export type CreateResult = Decision & { position: bigint }

// `traceparent`: the request's span, kept sealed with the event (its CloudEvent carries it).
export type CreateRequest = { command: CreatePlant; requestId: string; traceparent?: string }

// A projection swap holds the events table exclusively and then drops `plants`; a create whose
// plan had locked `plants` first would wait on the swap in a cycle, and PostgreSQL aborts one of
// the two, having changed nothing. After the swap the create goes through.
const DEADLOCK_DETECTED = '40P01'
const MAX_ATTEMPTS = 3
// A create sealed under a key that is no longer live is sealed again under the owner's new one;
// more than once only while erasures of the same owner keep beginning.
const MAX_KEY_ATTEMPTS = 5
// Enough for every request of a heavily loaded server to share one commit.
const MAX_BATCH_SIZE = 256

// Creates on `db` through group commit: the creates that arrive while a batch is in the database
// share the next batch's statement, transaction and commit.
// Several lanes means PostgreSQL (main.ts): its statements leave this thread free, so a create that
// finds nothing in the database starts at once rather than after the event loop's turn.
// With tracing, each batch has a span (see batchSpan).
export function plantCreator(db: Database, keys: OwnerKeyCache, inFlight = 1, tracing?: Tracing) {
  const run = tracing
    ? (requests: CreateRequest[]) => traced(tracing, requests, () => createPlants(db, keys, requests))
    : (requests: CreateRequest[]) => createPlants(db, keys, requests)
  const create = groupCommit(run, {
    maxBatchSize: MAX_BATCH_SIZE,
    inFlight,
    idleStart: inFlight > 1 ? 'microtask' : 'immediate',
  })
  return (command: CreatePlant, requestId: string, traceparent?: string) =>
    create({ command, requestId, traceparent })
}

// A batch serves many requests, each of its own trace: its span is the child of the request that
// opened it, so a lone create (the usual case below saturation) shows its statement inside its
// own trace, and links to every other request it carried, as OpenTelemetry models batches.
function traced<T>(tracing: Tracing, requests: CreateRequest[], run: () => Promise<T>): Promise<T> {
  const [first, ...others] = requests.map((request) => request.traceparent)
  const options = {
    kind: 'client' as const,
    parent: first,
    links: others.flatMap((traceparent) => traceparent ?? []),
    attributes: {
      'db.system.name': 'postgresql',
      'db.operation.name': 'append_events',
      'db.operation.batch.size': requests.length,
    },
  }
  return inSpan(tracing, 'append_events', options, run)
}

export type PlantCreator = ReturnType<typeof plantCreator>

export async function createPlant(
  db: Database,
  keys: OwnerKeyCache,
  command: CreatePlant,
  requestId: string,
  traceparent?: string,
): Promise<CreateResult> {
  const [result] = await appendWithRetries(db, keys, [{ command, requestId, traceparent }])
  if (!result) throw new Error('a create gave no result')
  return result
}

// A batch of creates, each with its own answer. When the batch's statement fails, no create of it
// has changed anything; the creates are then made one by one, so that an error reaches only the
// creates it concerns. When the database is unreachable or full, they all fail at once.
export async function createPlants(
  db: Database,
  keys: OwnerKeyCache,
  requests: CreateRequest[],
): Promise<PromiseSettledResult<CreateResult>[]> {
  try {
    return (await appendWithRetries(db, keys, requests)).map((value) => ({ status: 'fulfilled', value }))
  } catch (error) {
    if (requests.length === 1 || isDatabaseUnavailable(error) || diskFull(error)) {
      return requests.map(() => ({ status: 'rejected', reason: error }))
    }
    const results: PromiseSettledResult<CreateResult>[] = []
    for (const { command, requestId, traceparent } of requests) {
      results.push(
        await createPlant(db, keys, command, requestId, traceparent).then(
          (value) => ({ status: 'fulfilled', value }),
          (reason: unknown) => ({ status: 'rejected', reason }),
        ),
      )
    }
    return results
  }
}

async function appendWithRetries(
  db: Database,
  keys: OwnerKeyCache,
  requests: CreateRequest[],
): Promise<CreateResult[]> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await appendAndDecide(db, keys, requests)
    } catch (error) {
      if (attempt >= MAX_ATTEMPTS || postgresErrorCode(error) !== DEADLOCK_DETECTED) throw error
    }
  }
}

// What a stream holds once the batch's statement ran: its event's position, and the state the
// create that appended it decided on (the others of the stream decide on the stored plant).
type Stream = { state: PlantState; position: bigint; appendedBy?: CreateRequest }

// Most creates are of a plant that does not exist yet, so the first create of each stream in the
// batch is decided on an empty stream and appended at once: one statement for the whole batch. A
// stream that turns out to have its event already is read, and that create decided again on it (a
// retry is unchanged, a different plant a conflict). Later creates of a stream in the same batch are
// decided, in order, on what its first one left.
async function appendAndDecide(
  db: Database,
  keys: OwnerKeyCache,
  requests: CreateRequest[],
): Promise<CreateResult[]> {
  // One stream per owner and plant id (its stored id, an HMAC under the owner's key).
  const streamOf = ({ command }: CreateRequest) => `${command.plant.id}:${command.owner}`
  const leads = new Map<string, CreateRequest>()
  for (const request of requests) if (!leads.has(streamOf(request))) leads.set(streamOf(request), request)
  const outcomes = await appendSealed(db, keys, [...leads.values()])
  const streams = new Map<string, Stream>()
  await Promise.all(
    [...leads].map(async ([streamId, lead], order) => {
      const outcome = outcomes[order] as Exclude<Appended, 'rekey'>
      const created: PlantState = { status: 'created', plant: lead.command.plant }
      streams.set(
        streamId,
        'taken' in outcome
          ? await readStoredStream(db, keys, outcome.taken, lead.command)
          : { state: created, position: outcome.position, appendedBy: lead },
      )
    }),
  )
  return requests.map((request) => {
    const { state, position, appendedBy } = streams.get(streamOf(request)) as Stream
    return { ...decide(request.command, appendedBy === request ? initialState : state), position }
  })
}

// Each lead create decided on an empty stream and appended; those sealed under a key that turned
// out not to be live are sealed again under the owner's current key and appended again.
async function appendSealed(db: Database, keys: OwnerKeyCache, leads: CreateRequest[]): Promise<Appended[]> {
  const outcomes: Appended[] = leads.map(() => 'rekey')
  for (let attempt = 1; attempt <= MAX_KEY_ATTEMPTS; attempt++) {
    const pending = leads.flatMap((_, index) => (outcomes[index] === 'rekey' ? [index] : []))
    if (pending.length === 0) return outcomes
    const appended = await appendEvents(
      db,
      keys,
      pending.map((index) => firstAppend(leads[index] as CreateRequest)),
    )
    for (const [order, index] of pending.entries()) outcomes[index] = appended[order] as Appended
  }
  if (outcomes.includes('rekey')) throw new Error("an owner's key changed under every attempt of a create")
  return outcomes
}

function firstAppend({ command, requestId, traceparent }: CreateRequest): StreamAppend {
  const [event] = decide(command, initialState).events
  if (!event) throw new Error('a plant decided on an empty stream comes with its event')
  const { owner, plant } = command
  return {
    owner,
    plantId: plant.id,
    requestId,
    traceparent,
    expectedVersion: 0,
    event: encodePlantEvent(event),
  }
}

async function readStoredStream(
  db: Database,
  keys: OwnerKeyCache,
  key: StoredKey,
  { plant }: CreatePlant,
): Promise<Stream> {
  const history = await readPlantStream(db, keys.keyring, key, plant.id)
  const last = history.at(-1)
  // The append was skipped only because the stream's first event is committed.
  // The error names no plant: it is logged, and logs hold no person's data.
  if (!last) throw new Error('a stream the append found taken holds no event')
  return { state: history.map(decodePlantEvent).reduce(evolve, initialState), position: last.position }
}
