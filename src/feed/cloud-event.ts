import { decodePlantEvent } from '../plants/domain.ts'
import type { LoggedEvent } from '../store/event-log.ts'
import { feedSubject } from './subjects.ts'

export type FeedMessage = {
  subject: string
  // The event's position, decimal: the CloudEvents id and the Nats-Msg-Id.
  id: string
  // The writing transaction, decimal: with the id, where in the log the message stands.
  transactionId: string
  body: string
}

export type MessageSettings = { subjectPrefix: string; source: string }

export const CLOUD_EVENTS_CONTENT_TYPE = 'application/cloudevents+json'

// A logged event as a CloudEvents 1.0 structured JSON message (CONTRACT §8), in its current shape
// whatever shape it was stored in. Ids are decimal strings so that no JSON reader rounds them.
export function toFeedMessage(event: LoggedEvent, { subjectPrefix, source }: MessageSettings): FeedMessage {
  const plant = decodePlantEvent(event)
  const id = event.position.toString()
  const data =
    plant.data.tag === null
      ? { id: plant.data.id.toString(), name: plant.data.name }
      : { id: plant.data.id.toString(), name: plant.data.name, tag: plant.data.tag }
  const cloudEvent = {
    specversion: '1.0',
    id,
    source,
    type: plant.type,
    subject: plant.data.id.toString(),
    time: event.time,
    datacontenttype: 'application/json',
    owner: event.metadata.owner,
    data,
  }
  return {
    subject: feedSubject(subjectPrefix, plant.type),
    id,
    transactionId: event.transactionId.toString(),
    body: JSON.stringify(cloudEvent),
  }
}
