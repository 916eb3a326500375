import { decodePlantEvent } from '../plants/domain.ts'
import type { LoggedEvent } from '../store/event-log.ts'

export type FeedMessage = {
  // `<prefix>.events.<type>`, so that a consumer subscribes to `feedFilter(prefix)`.
  subject: string
  // The event's position, decimal: the CloudEvents id and the Nats-Msg-Id.
  id: string
  // The writing transaction, decimal: with the id, where in the log the message stands.
  transactionId: string
  body: string
}

export type MessageSettings = { subjectPrefix: string; source: string }

export const CLOUD_EVENTS_CONTENT_TYPE = 'application/cloudevents+json'

export function feedFilter(prefix: string): string {
  return `${prefix}.events.>`
}

// A logged event as a CloudEvents 1.0 structured JSON message (CONTRACT §8), in its current shape
// whatever shape it was stored in. Ids are decimal strings so that no JSON reader rounds them.
export function toFeedMessage(event: LoggedEvent, { subjectPrefix, source }: MessageSettings): FeedMessage {
  const { type, data } = decodePlantEvent(event)
  const id = event.position.toString()
  const plantId = data.id.toString()
  const cloudEvent = {
    specversion: '1.0',
    id,
    source,
    type,
    subject: plantId,
    time: event.time,
    datacontenttype: 'application/json',
    owner: event.metadata.owner,
    data:
      data.tag === null ? { id: plantId, name: data.name } : { id: plantId, name: data.name, tag: data.tag },
  }
  return {
    subject: `${subjectPrefix}.events.${type}`,
    id,
    transactionId: event.transactionId.toString(),
    body: JSON.stringify(cloudEvent),
  }
}
