import { readStoredPlant } from '../domain/plant.ts'
import { openSealed } from '../keys/sealing.ts'
import { parseEventData } from './event-data.ts'

// An event as the database keeps it: its parts sealed under its owner's key (keys/sealing.ts).
export type StoredParts = { position: bigint; type: string; schemaVersion: number; data: unknown }

// What each stored shape of an event means, in today's shape, opened with the owner's key: a
// PlantCreated's data is `{id, name, tag}` (the id as decimal text, the tag null when none),
// whichever version wrote it; an OwnerErased holds nothing of its owner. A type or version this
// code does not know, or data that breaks the plant's rules, is an error naming only the event.
export function openedData(event: StoredParts, key: Uint8Array | undefined): Record<string, unknown> {
  const where = `${event.type} v${event.schemaVersion} at position ${event.position}`
  if (event.type === 'OwnerErased' && event.schemaVersion === 1) return {}
  if (event.type !== 'PlantCreated') throw new Error(`unknown event ${where}`)
  if (key === undefined) throw new Error(`no key opens ${where}`)
  const text = openSealed(event.data, key, 'data')
  const plant = readStoredPlant(
    event.type,
    event.schemaVersion,
    text === undefined ? event.data : parseEventData(text),
  )
  if (typeof plant === 'string') throw new Error(`malformed event ${where}: ${plant}`)
  return { id: plant.id.toString(), name: plant.name, tag: plant.tag }
}

// The request id and trace context sealed in an event's metadata; nothing when it holds none.
export function openedMetadata(
  metadata: unknown,
  key: Uint8Array,
): { requestId?: string; traceparent?: string } {
  const text = openSealed(metadata, key, 'metadata')
  if (text === undefined) return {}
  const { requestId, traceparent } = JSON.parse(text) as Record<string, unknown>
  return {
    ...(typeof requestId === 'string' ? { requestId } : {}),
    ...(typeof traceparent === 'string' ? { traceparent } : {}),
  }
}
