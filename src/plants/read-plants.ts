import type { Executor } from '../store/database.ts'
import type { ReplicaSet } from '../store/replica-health.ts'
import { isDatabaseUnavailable } from '../store/unavailable.ts'
import { type ListRequest, listPlants, listPlantsCovering, type PlantListing } from './list-plants.ts'

// A listing wherever it is best read. `covering` (the request's Plant-Store-Position) is a
// position the read must see, when it is one of the caller's; 0 or undefined asks for nothing.
export type ReadPlants = (request: ListRequest, covering?: bigint) => Promise<PlantListing>

export type PlantReadsDeps = {
  primary: Executor
  replicas: Pick<ReplicaSet, 'available' | 'markDown'>
  // How long a read waits for a replica to apply the caller's position before it asks the primary.
  waitMs: number
  // Told where each read was served: a replica's name, or 'primary'; and, for a read that named a
  // position, how long it waited before the read that served it began (looking at, and waiting
  // for, replicas that had not applied it yet).
  onRead?: (source: string, waitedMs?: number) => void
  list?: typeof listPlantsCovering
  clock?: () => number
  sleep?: (ms: number) => Promise<void>
}

export const PRIMARY = 'primary'

// Between two looks at a lagging replica: short at first, as replicas are usually milliseconds
// behind.
const POLL_DELAYS_MS = [1, 2, 5, 10, 20, 50]

// The primary alone: it sees every committed write, so it needs no position.
export function primaryReads(primary: Executor): ReadPlants {
  return (request) => listPlants(primary, request)
}

// Reads go to a replica that is up and not far behind; one that fails is skipped (and left out
// until its next check). A read that names the caller's position is served by a replica that
// shows it in the same snapshot as the rows (so every plant of the caller up to it: one owner's
// events commit in position order, and a replica replays commits in order); replicas that do not
// show it yet are looked at again until `waitMs` has passed, then the primary answers. A position
// that is another owner's event says nothing about the caller's: the primary answers at once.
export function replicaReads({
  primary,
  replicas,
  waitMs,
  onRead = () => {},
  list = listPlantsCovering,
  clock = () => performance.now(),
  sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
}: PlantReadsDeps): ReadPlants {
  const readPrimary = async (request: ListRequest, waitedMs?: number): Promise<PlantListing> => {
    const listing = await list(primary, request, 0n)
    if (listing.kind === 'uncovered') throw new Error('the primary shows every committed write')
    onRead(PRIMARY, waitedMs)
    return listing
  }
  return async (request, covering = 0n) => {
    const started = clock()
    const deadline = started + waitMs
    const waitedUntil = (now: number) => (covering > 0n ? now - started : undefined)
    for (let attempt = 0; ; attempt++) {
      let waiting = false
      for (const replica of replicas.available()) {
        const looked = clock()
        const listing = await list(replica.db, request, covering).catch((error: unknown) => {
          if (isDatabaseUnavailable(error)) replicas.markDown(replica)
          return undefined
        })
        if (listing === undefined) continue
        if (listing.kind !== 'uncovered') {
          onRead(replica.name, waitedUntil(looked))
          return listing
        }
        if (listing.event === 'other') return readPrimary(request, waitedUntil(clock()))
        waiting = true
      }
      const delay = POLL_DELAYS_MS[Math.min(attempt, POLL_DELAYS_MS.length - 1)] ?? 50
      if (!waiting || clock() + delay > deadline) return readPrimary(request, waitedUntil(clock()))
      await sleep(delay)
    }
  }
}
