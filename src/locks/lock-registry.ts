import type { LockSpace } from './lock-spaces.ts'

export type LockMode = 'shared' | 'exclusive'

// A lock the service takes, named once: its keys, how each of its holders takes it, what it
// protects and what fences that. docs/operating.md's table of locks (The locks) is these rows,
// word for word (test/locks/lock-registry.unit.test.ts).
export type RegisteredLock = {
  // The table's name for it.
  lock: string
  // 'one key': a lock of PostgreSQL's one-key form (a bigint), which no space of two keys meets.
  space: LockSpace | 'one key'
  // The second key: a fixed name, or (in <>) what names each one.
  name: string
  // How each holder takes it, by who they are.
  modes: Readonly<Record<string, LockMode>>
  heldBy: string
  protects: string
  fencedBy: string
  whenLost: string
}

export const LOCKS = {
  migration: {
    lock: 'the migration',
    space: 'migration',
    name: 'migration',
    modes: { 'each start': 'exclusive' },
    heldBy: 'each start, and `db migrate`',
    protects: 'the migrations, run by one instance at a time',
    fencedBy:
      "the migrations run in the lock's transaction; the upgrade after them (outside any transaction: `VACUUM`) runs under the lock taken again, proved at its end",
    whenLost: 'the migrations commit nothing; the start stops (exit 1), and the next start applies them',
  },
  erasureOrRebuild: {
    lock: 'erasure or rebuild',
    space: 'maintenance',
    name: 'erasure-or-rebuild',
    modes: { rebuilds: 'shared', "an erasure's first step": 'exclusive' },
    heldBy: '`projection rebuild`, `owners erase`',
    protects: "a rebuild's table, filled before an erasure began, never becomes `plants`",
    fencedBy:
      "the swap and the erasure's first step each run in the lock's transaction; and a swap drops the rows of owners whose key is being erased",
    whenLost:
      'the swap, or the first step, commits nothing (`nothing was swapped`, `nothing was erased`): run it again',
  },
  erasureOrImport: {
    lock: 'erasure or import',
    space: 'maintenance',
    name: 'erasure-or-import',
    modes: { imports: 'shared', "an erasure's last step": 'exclusive' },
    heldBy: '`events import`, `owners erase`',
    protects:
      "an import's staging table, which may hold the owner in the clear, never outlives an erasure: its last step (the key deleted) waits for the imports that run",
    fencedBy:
      "the erasure's last step runs in the lock's transaction; an import holds it in its table lock's transaction",
    whenLost:
      'the last step commits nothing (`the erasure is pending`): run it again; an import imports nothing (`nothing was imported`)',
  },
  workTable: {
    lock: "a work table's (`plants_rebuild_*`, `import_staging_*`)",
    space: 'maintenance',
    name: '<the table>',
    modes: { 'its run': 'exclusive' },
    heldBy: 'the rebuild or import that made it',
    protects: "the table, from being dropped as a dead run's",
    fencedBy:
      "an import's append of its staged events runs in its table lock's transaction, and each staged batch proves the lock first",
    whenLost:
      'the import imports nothing (`nothing was imported`); the table is dropped by the next run or erasure',
  },
  owner: {
    lock: "an owner's",
    space: 'one key',
    name: 'hashtextextended(<the owner>, 0)',
    modes: { 'each taker': 'exclusive' },
    heldBy: "a new owner's create, an import's append (of the owners it brings), an erasure's first step",
    protects:
      "one owner's events, which commit in the order of their positions; a new owner's key, stored once",
    fencedBy: 'nothing needs it: it is held by the transaction it protects (`src/locks/owner-lock.ts`)',
    whenLost: 'that transaction fails and commits nothing',
  },
  feedLeadership: {
    lock: "the feed's leadership, one per stream",
    space: 'feed',
    name: 'feed-<hash of the stream>',
    modes: { 'the leader': 'exclusive' },
    heldBy: 'the instance that publishes',
    protects: 'one publisher at a time (an optimisation)',
    fencedBy:
      'nothing needs it: a stale leader that publishes on is refused by the stream, which holds each position once (`test/feed/relay.int.test.ts`)',
    whenLost:
      'the leader finds it at its next question (each second), steps down, and another instance leads',
  },
} as const satisfies Record<string, RegisteredLock>

// The row of docs/operating.md's table for `lock`, cell by cell.
export function lockTableRow(lock: RegisteredLock): string[] {
  const modes = Object.entries(lock.modes).map(([holder, mode]) => `${mode} (${holder})`)
  return [
    lock.lock,
    `\`${lock.space}\`, \`${lock.name}\``,
    modes.join(', '),
    lock.heldBy,
    lock.protects,
    lock.fencedBy,
    lock.whenLost,
  ]
}

export const LOCK_TABLE_HEADER = [
  'lock',
  'keys',
  'mode',
  'held by',
  'protects',
  'fenced by',
  'when it is lost',
]
