import { asc, eq, sql } from 'drizzle-orm'
import type { Executor, Transaction } from './database.ts'
import { parseEventData } from './event-data.ts'
import { events } from './schema.ts'

export type EventMetadata = (typeof events.$inferSelect)['metadata']

export type NewEvent = { type: string; schemaVersion: number; data: unknown; recordedAt: Date }

export type RecordedEvent = NewEvent & {
  position: bigint
  streamId: string
  streamVersion: number
  metadata: EventMetadata
}

// What folding an event into a projection needs; a replay reads only this much of each event.
export type FoldableEvent = Pick<
  RecordedEvent,
  'position' | 'type' | 'schemaVersion' | 'data' | 'recordedAt'
> & {
  metadata: Pick<EventMetadata, 'owner'>
}

export async function readStream(tx: Executor, streamId: string): Promise<RecordedEvent[]> {
  return tx
    .select(recordedColumns)
    .from(events)
    .where(eq(events.streamId, streamId))
    .orderBy(asc(events.streamVersion))
}

// Appends after `expectedVersion`. A concurrent writer that got there first makes the insert fail
// on the (stream_id, stream_version) unique key: at most one of them wins.
export async function appendToStream(
  tx: Transaction,
  streamId: string,
  expectedVersion: number,
  newEvents: NewEvent[],
  metadata: EventMetadata,
): Promise<RecordedEvent[]> {
  if (newEvents.length === 0) return []
  return tx
    .insert(events)
    .values(
      newEvents.map((event, index) => ({
        streamId,
        streamVersion: expectedVersion + index + 1,
        type: event.type,
        schemaVersion: event.schemaVersion,
        data: event.data,
        metadata,
        recordedAt: event.recordedAt,
      })),
    )
    .returning(recordedColumns)
}

export const recordedColumns = {
  position: events.position,
  streamId: events.streamId,
  streamVersion: events.streamVersion,
  type: events.type,
  schemaVersion: events.schemaVersion,
  data: sql<unknown>`${events.data}::text`.mapWith(parseEventData),
  metadata: events.metadata,
  recordedAt: events.recordedAt,
}
