import type { Executor } from '../database/database.ts'
import { groupCommit } from '../shared/batching.ts'
import { type PageFound, type PageRead, type PlainReads, readPages, readVersions } from './page-statements.ts'

// Pages as large as this wait for no other; larger ones are read alone, so that a batch's text,
// held at once, stays small whatever the plants' names.
const GROUPED_PAGE_SIZE = 100
const MAX_BATCH_SIZE = 32

// Reads that arrive while a batch is in the database share the next one: one statement, one
// snapshot, one round trip for all of them (as creates do, src/shared/batching.ts). A statement
// costs PostgreSQL and the driver far more than the index probes of one page in it.
export function groupedReads(db: Executor, inFlight: number): PlainReads {
  const options = { maxBatchSize: MAX_BATCH_SIZE, inFlight, idleStart: 'microtask' } as const
  const version = groupCommit(async (owners: string[]) => fulfilled(await readVersions(db, owners)), options)
  const page = groupCommit(async (reads: PageRead[]) => fulfilled(await readPages(db, reads)), options)
  return {
    version,
    page: async (read) =>
      read.count > GROUPED_PAGE_SIZE ? ((await readPages(db, [read]))[0] as PageFound) : page(read),
  }
}

function fulfilled<Value>(values: Value[]): PromiseFulfilledResult<Value>[] {
  return values.map((value) => ({ status: 'fulfilled', value }))
}
