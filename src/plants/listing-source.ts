import type { Executor } from '../database/database.ts'
import {
  askReplicas,
  PRIMARY,
  type ReplicaAnswer,
  type ReplicaChoiceDeps,
} from '../replicas/replica-choice.ts'
import { type ListRequest, listPlants, listPlantsCovering, type PlantListing } from './listing.ts'
import { groupedReads } from './page-groups.ts'

// A listing wherever it is best read. `covering` (the request's Plant-Store-Position) is a
// position the read must see, when it is one of the caller's; 0 or undefined asks for nothing.
export type ReadPlants = (request: ListRequest, covering?: bigint) => Promise<PlantListing>

// `waitMs`: how long a read waits for a replica to apply the caller's position before it asks the
// primary.
export type PlantReadsDeps = ReplicaChoiceDeps & {
  primary: Executor
  // Told where each read was served: a replica's name, or 'primary'; and, for a read that named a
  // position, how long it waited before the read that served it began (looking at, and waiting
  // for, replicas that had not applied it yet).
  onRead?: (source: string, waitedMs?: number) => void
  list?: typeof listPlantsCovering
}

// The primary alone: it sees every committed write, so it needs no position. Pages and versions of
// concurrent listings share statements, `inFlight` of them in the database at once.
export function primaryReads(primary: Executor, inFlight = 1): ReadPlants {
  const reads = groupedReads(primary, inFlight)
  return (request) => listPlants(primary, request, reads)
}

// Reads go to a replica that is up and not far behind (replicas/replica-choice.ts). A read that
// names the caller's position is served by a replica that shows it in the same snapshot as the
// rows (so every plant of the caller up to it: one owner's events commit in position order, and a
// replica replays commits in order); replicas that do not show it yet are looked at again until
// `waitMs` has passed, then the primary answers. A position that is another owner's event says
// nothing about the caller's: the primary answers at once.
export function replicaReads({
  primary,
  onRead = () => {},
  list = listPlantsCovering,
  clock = () => performance.now(),
  ...choice
}: PlantReadsDeps): ReadPlants {
  return async (request, covering = 0n) => {
    const started = clock()
    const waited = (at: number) => (covering > 0n ? at - started : undefined)
    const served = await askReplicas(
      { ...choice, clock },
      async (db): Promise<ReplicaAnswer<PlantListing>> => {
        const listing = await list(db, request, covering)
        if (listing.kind !== 'uncovered') return { kind: 'served', value: listing }
        return { kind: listing.event === 'other' ? 'primary' : 'behind' }
      },
    )
    if (served) {
      onRead(served.replica, waited(served.lookedAt))
      return served.value
    }
    const askedPrimaryAt = clock()
    const listing = await list(primary, request, 0n)
    if (listing.kind === 'uncovered') throw new Error('the primary shows every committed write')
    onRead(PRIMARY, waited(askedPrimaryAt))
    return listing
  }
}
