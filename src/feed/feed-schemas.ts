import { type Static, Type } from '@sinclair/typebox'

// The feed's messages as TypeBox schemas: cloud-event.ts builds each message to these types, and
// the AsyncAPI document (asyncapi-document.ts) is generated from them.

export const CLOUD_EVENTS_CONTENT_TYPE = 'application/cloudevents+json'

const Position = Type.String({
  pattern: '^[1-9][0-9]*$',
  description: "The event's position in the log, decimal: increasing in log order for one owner",
})
const Int64Text = Type.String({
  pattern: '^-?[0-9]{1,19}$',
  description: "The plant's id, an int64 as a decimal string so that no JSON reader rounds it",
})
// Milliseconds for events this service writes, microseconds where an imported event has them.
const RecordedTime = Type.String({
  format: 'date-time',
  pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]{1,6})?Z$',
  description: 'When the event was recorded, in UTC',
})
const envelope = {
  specversion: Type.Literal('1.0'),
  id: Position,
  source: Type.String({ minLength: 1, description: 'EVENTS_SOURCE (default plant-store)' }),
  time: RecordedTime,
  owner: Type.String({
    minLength: 1,
    description: 'The owner: the `sub` of the token that created the plant',
  }),
}

export const PlantData = Type.Object(
  {
    id: Int64Text,
    name: Type.String({ minLength: 1, maxLength: 1024 }),
    tag: Type.Optional(Type.String({ maxLength: 1024, description: 'Left out when the plant has none' })),
  },
  { description: "The plant, shaped like the API's Plant with its id" },
)

export const PlantCreatedEvent = Type.Object(
  {
    ...envelope,
    type: Type.Literal('PlantCreated'),
    subject: Int64Text,
    datacontenttype: Type.Literal('application/json'),
    traceparent: Type.Optional(
      Type.String({
        pattern: '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$',
        description: 'The W3C trace context of the traced request that created the plant',
      }),
    ),
    data: PlantData,
  },
  { description: 'A plant was created: a CloudEvents 1.0 structured JSON message' },
)
export type PlantCreatedEvent = Static<typeof PlantCreatedEvent>

export const OwnerErasedEvent = Type.Object(
  { ...envelope, type: Type.Literal('OwnerErased') },
  {
    description:
      'An owner was erased: drop what was derived from their plants; their PlantCreated messages are purged from the stream',
  },
)
export type OwnerErasedEvent = Static<typeof OwnerErasedEvent>

export const FeedHeaders = Type.Object(
  {
    'Content-Type': Type.Literal(CLOUD_EVENTS_CONTENT_TYPE),
    'Nats-Msg-Id': Position,
    'Plant-Store-Log-Transaction': Type.String({
      pattern: '^[0-9]+$',
      description: 'The writing transaction, decimal: with the id, where in the log the message stands',
    }),
  },
  { description: 'The NATS headers of every feed message' },
)
