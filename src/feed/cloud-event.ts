import { decodePlantEvent } from '../domain/plant.ts'
import type { LoggedEvent } from '../event-log/reading.ts'
import type { OwnerErasedEvent, PlantCreatedEvent } from './feed-schemas.ts'

export type PublishedMessage = {
  // `<prefix>.events.<type>`, a PlantCreated's followed by its owner's pseudonym, so that a
  // consumer subscribes to `feedFilter(prefix)` and an erasure purges one subject.
  subject: string
  // The event's position, decimal: the CloudEvents id and the Nats-Msg-Id.
  id: string
  // The writing transaction, decimal: with the id, where in the log the message stands.
  transactionId: string
  body: string
  // The W3C trace context of the request that made the event, when it was traced: the CloudEvent's
  // distributed-tracing extension attribute, and the parent of the publish's span.
  traceparent?: string
}

export type MessageSettings = { subjectPrefix: string; source: string }

export function feedFilter(prefix: string): string {
  return `${prefix}.events.>`
}

// Where an owner's PlantCreated messages go: the feed allows one token after the type
// (docs/feed.md), opaque to consumers, and the pseudonym (random, never derived from the subject)
// is the one an erasure purges by.
export function plantSubject(prefix: string, pseudonym: string): string {
  return `${legacyPlantSubject(prefix)}.${pseudonym}`
}

// Where PlantCreated went before the log was erasable: no token, so purged by sequence.
export function legacyPlantSubject(prefix: string): string {
  return `${prefix}.events.PlantCreated`
}

// A logged event as a CloudEvents 1.0 structured JSON message (docs/feed.md; docs/erasure.md), in its current
// shape whatever shape it was stored in; undefined for an event that is never published: an
// OwnerErased whose erasure has completed names no one (a stream created after it holds nothing
// of the owner, and no notice), nor does a PlantCreated whose owner's key is gone.
export function toPublishedMessage(
  event: LoggedEvent,
  settings: MessageSettings,
): PublishedMessage | undefined {
  const { owner, pseudonym } = event.metadata
  if (owner === null) return undefined
  if (event.type === 'OwnerErased') return ownerErasedMessage(event, owner, settings)
  return plantCreatedMessage(event, owner, pseudonym, settings)
}

// Ids are decimal strings so that no JSON reader rounds them.
function plantCreatedMessage(
  event: LoggedEvent,
  owner: string,
  pseudonym: string,
  { subjectPrefix, source }: MessageSettings,
): PublishedMessage {
  const { type, data } = decodePlantEvent(event)
  const id = event.position.toString()
  const plantId = data.id.toString()
  const { traceparent } = event.metadata
  const cloudEvent: PlantCreatedEvent = {
    specversion: '1.0',
    id,
    source,
    type,
    subject: plantId,
    time: event.time,
    datacontenttype: 'application/json',
    owner,
    ...(traceparent === undefined ? {} : { traceparent }),
    data:
      data.tag === null ? { id: plantId, name: data.name } : { id: plantId, name: data.name, tag: data.tag },
  }
  return {
    subject: plantSubject(subjectPrefix, pseudonym),
    id,
    transactionId: event.transactionId.toString(),
    body: JSON.stringify(cloudEvent),
    ...(traceparent === undefined ? {} : { traceparent }),
  }
}

// The notice that tells consumers to drop what they derived from the owner: the one message that
// still names them, by design; it has no data and no subject (no plant).
function ownerErasedMessage(
  event: LoggedEvent,
  owner: string,
  { subjectPrefix, source }: MessageSettings,
): PublishedMessage {
  const id = event.position.toString()
  const cloudEvent: OwnerErasedEvent = {
    specversion: '1.0',
    id,
    source,
    type: 'OwnerErased',
    time: event.time,
    owner,
  }
  return {
    subject: `${subjectPrefix}.events.OwnerErased`,
    id,
    transactionId: event.transactionId.toString(),
    body: JSON.stringify(cloudEvent),
  }
}
