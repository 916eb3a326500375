// The first key of each two-key advisory lock the service takes, and the one layout of both keys:
// (space, hashtext(name)), which pg_locks shows as classid = space, objid = hashtext(name), objsubid
// = 2. Declared here only: a lock of another space is no lock of this service's.
export const LOCK_SPACES = {
  // A fixed constant of every instance: 'plmg' in ASCII.
  migration: 0x706c6d67,
  // The locks of the log's maintenance (rebuilds, imports, erasures) and of their work tables.
  maintenance: 1347638356,
  // The feed's leadership: 'plan' in ASCII.
  feed: 0x706c616e,
} as const

export type LockSpace = keyof typeof LOCK_SPACES

const NAME = /^[\w-]+$/

// The arguments of pg_(try_)advisory_xact_lock* for the lock `name` of `space`, as SQL text: sent by
// the simple protocol, whose statements hold no portal (and snapshot) open after they answer.
export function lockKeyText(space: number, name: string): string {
  if (!NAME.test(name)) throw new Error(`not a lock name: ${name}`)
  return `${space}, hashtext('${name}')`
}

// A condition on pg_locks (as `alias`) that holds for a granted lock of `space` whose name is the
// SQL expression `name` (a quoted literal, or a column such as a table's relname).
export function heldLockCondition(space: number, name: string, alias = 'l'): string {
  return `${alias}.locktype = 'advisory' and ${alias}.classid = ${space}::oid
    and ${alias}.objid = hashtext(${name})::oid and ${alias}.objsubid = 2 and ${alias}.granted`
}
