import { sql } from 'drizzle-orm'
import {
  bigint,
  bigserial,
  boolean,
  customType,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
  uniqueIndex,
} from 'drizzle-orm/pg-core'

const xid8 = customType<{ data: bigint; driverData: string }>({
  dataType: () => 'xid8',
  fromDriver: (value) => BigInt(value),
})

const bytea = customType<{ data: Uint8Array; driverData: Uint8Array }>({ dataType: () => 'bytea' })

// What the log keeps of an owner is in the erasable form (docs/erasure.md, event-log/pseudonyms.ts): the
// owner's pseudonym, and the plant's data and the request id sealed under the owner's key.
export type EventMetadata = { pseudonym: string; sealed?: string }

// Append-only: a trigger in the migrations refuses UPDATE, DELETE and TRUNCATE. A check added
// NOT VALID by migration 0006 (events_erasable) refuses an event without a pseudonym, so that an
// instance of a version before erasure can no longer write plaintext (keys/log-upgrade.ts).
export const events = pgTable(
  'events',
  {
    position: bigserial('position', { mode: 'bigint' }).primaryKey(),
    // The writing transaction, so readers of the global log can tell which positions may still commit.
    transactionId: xid8('transaction_id').notNull().default(sql`pg_current_xact_id()`),
    streamId: text('stream_id').notNull(),
    streamVersion: integer('stream_version').notNull(),
    type: text('type').notNull(),
    schemaVersion: integer('schema_version').notNull(),
    data: jsonb('data').notNull(),
    metadata: jsonb('metadata').$type<EventMetadata>().notNull(),
    recordedAt: timestamp('recorded_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (table) => [
    unique('events_stream_version_unique').on(table.streamId, table.streamVersion),
    // The order in which the global log is read without skipping late commits (event-log/reading.ts).
    index('events_transaction_position').on(table.transactionId, table.position),
  ],
)

// A rebuild fills a table of the same shape under another name and swaps it in (projection/rebuild-projection.ts).
export function plantsTable<Name extends string>(name: Name) {
  return pgTable(
    name,
    {
      owner: text('owner').notNull(),
      id: bigint('id', { mode: 'bigint' }).notNull(),
      name: text('name').notNull(),
      tag: text('tag'),
      // Position of the PlantCreated event: orders the listing and keys the paging cursor.
      position: bigint('position', { mode: 'bigint' }).notNull(),
    },
    (table) => [
      primaryKey({ name: `${name}_owner_id_pk`, columns: [table.owner, table.id] }),
      index(`${name}_owner_position`).on(table.owner, table.position),
    ],
  )
}

export const plants = plantsTable('plants')

export type PlantsTable = ReturnType<typeof plantsTable<string>>

// How far into the log each projection table is: the highest event position it has folded.
export const projectionCheckpoints = pgTable('projection_checkpoints', {
  projection: text('projection').primaryKey(),
  position: bigint('position', { mode: 'bigint' }).notNull(),
})

// How many times a rebuild changed an owner's `plants` rows (no row: never). A listing's ETag is
// the owner's head and this generation (plants/etag.ts): appends move the head, and a rebuild that
// changes an owner's rows without moving it bumps this instead (projection/rebuild-projection.ts).
export const ownerGenerations = pgTable('owner_generations', {
  owner: text('owner').primaryKey(),
  generation: bigint('generation', { mode: 'bigint' }).notNull(),
})

// Each owner's random pseudonym, by which the log names them, and the random key their events are
// sealed under (docs/erasure.md). Not append-only: erasing an owner deletes their key, which makes
// their events unreadable for good. `erasing`: an erasure has begun (its first step hides the
// owner; a create from then on makes a new key), and the row waits for the erasure's last step.
export const ownerKeys = pgTable(
  'owner_keys',
  {
    pseudonym: text('pseudonym').primaryKey(),
    owner: text('owner').notNull(),
    key: bytea('key').notNull(),
    erasing: boolean('erasing').notNull().default(false),
  },
  (table) => [uniqueIndex('owner_keys_owner').on(table.owner).where(sql`not erasing`)],
)

// The pseudonyms of owners whose erasure has completed: an export carries them so that an import
// knows their events are meant to be unreadable.
export const erasedOwners = pgTable('erased_owners', {
  pseudonym: text('pseudonym').primaryKey(),
  erasedAt: timestamp('erased_at', { withTimezone: true, mode: 'date' }).notNull(),
})

// Facts about the store that outlive a process: `feed`, the NATS stream the log has been
// published to, so that an erasure run without the feed's settings refuses (docs/erasure.md).
export const storeFacts = pgTable('store_facts', {
  name: text('name').primaryKey(),
  value: text('value').notNull(),
})
