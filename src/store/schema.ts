import { sql } from 'drizzle-orm'
import {
  bigint,
  bigserial,
  customType,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  unique,
} from 'drizzle-orm/pg-core'

const xid8 = customType<{ data: bigint; driverData: string }>({
  dataType: () => 'xid8',
  fromDriver: (value) => BigInt(value),
})

// Append-only: a trigger in the migrations refuses UPDATE, DELETE and TRUNCATE.
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
    metadata: jsonb('metadata').$type<{ owner: string; requestId: string }>().notNull(),
    recordedAt: timestamp('recorded_at', { withTimezone: true, mode: 'date' }).notNull(),
  },
  (table) => [
    unique('events_stream_version_unique').on(table.streamId, table.streamVersion),
    // The order in which the global log is read without skipping late commits (event-log.ts).
    index('events_transaction_position').on(table.transactionId, table.position),
  ],
)

// A rebuild fills a table of the same shape under another name and swaps it in (replay/).
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
// changes an owner's rows without moving it bumps this instead (replay/rebuild-projection.ts).
export const ownerGenerations = pgTable('owner_generations', {
  owner: text('owner').primaryKey(),
  generation: bigint('generation', { mode: 'bigint' }).notNull(),
})
