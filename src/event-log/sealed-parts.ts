import { type EventPlace, openSealed, streamIdOf } from '../crypto/sealing.ts'
import { readStoredPlant } from '../domain/plant.ts'
import { parseEventData } from './event-data.ts'

// An event as the database keeps it: its parts sealed under its owner's key (crypto/sealing.ts).
export type StoredParts = EventPlace & {
  position: bigint
  type: string
  schemaVersion: number
  data: unknown
}

// An event the readers of the log cannot take: it does not open with its owner's key, or what it
// holds does not fit where it stands. Its message names the event by its position alone.
export class UnfitEvent extends Error {
  constructor(
    readonly position: bigint,
    message: string,
  ) {
    super(message)
  }
}

// What each stored shape of an event means, in today's shape, opened with the owner's key: a
// PlantCreated's data is `{id, name, tag}` (the id as decimal text, the tag null when none),
// whichever version wrote it; an OwnerErased holds nothing of its owner. Data sealed in an earlier
// form, which does not bind it to its event (or not sealed at all), must name the plant of the
// stream it stands in (the HMAC of its id), as the first event of it: a copy of it elsewhere is
// refused too. A type or
// version this code does not know, data that breaks the plant's rules, or that does not open, is
// an UnfitEvent.
export function openedData(event: StoredParts, key: Uint8Array | undefined): Record<string, unknown> {
  const unfit = (message: string) => new UnfitEvent(event.position, message)
  const where = `${event.type} v${event.schemaVersion} at position ${event.position}`
  if (event.type === 'OwnerErased' && event.schemaVersion === 1) return {}
  if (event.type !== 'PlantCreated') throw unfit(`unknown event ${where}`)
  if (key === undefined) throw unfit(`no key opens ${where}`)
  const opened = openPart(event, key, event.data, 'data')
  const plant = readStoredPlant(
    event.type,
    event.schemaVersion,
    opened === undefined ? event.data : parseEventData(opened.text),
  )
  if (typeof plant === 'string') throw unfit(`malformed event ${where}: ${plant}`)
  const unbound = opened?.bound !== true
  if (unbound && (event.streamVersion !== 1 || streamIdOf(plant.id, key) !== event.streamId)) {
    throw unfit(`the event at position ${event.position} holds a plant that is not its stream's`)
  }
  return { id: plant.id.toString(), name: plant.name, tag: plant.tag }
}

// The request id and trace context sealed in an event's metadata; nothing when it holds none.
export function openedMetadata(
  event: EventPlace & { position: bigint },
  metadata: unknown,
  key: Uint8Array,
): { requestId?: string; traceparent?: string } {
  const opened = openPart(event, key, metadata, 'metadata')
  if (opened === undefined) return {}
  const { requestId, traceparent } = JSON.parse(opened.text) as Record<string, unknown>
  return {
    ...(typeof requestId === 'string' ? { requestId } : {}),
    ...(typeof traceparent === 'string' ? { traceparent } : {}),
  }
}

function openPart(
  event: EventPlace & { position: bigint },
  key: Uint8Array,
  field: unknown,
  part: 'data' | 'metadata',
) {
  try {
    return openSealed(field, key, part, event)
  } catch {
    const message = `the event at position ${event.position} does not open with its owner's key (its ${part})`
    throw new UnfitEvent(event.position, message)
  }
}
