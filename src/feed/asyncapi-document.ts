import { toJsonSchema } from '../openapi/json-schema.ts'
import {
  CLOUD_EVENTS_CONTENT_TYPE,
  FeedHeaders,
  OwnerErasedEvent,
  PlantCreatedEvent,
} from './feed-schemas.ts'

// The AsyncAPI 3.0 document of the feed (docs/feed.md), generated from the TypeBox schemas the
// messages are built to, as the OpenAPI document is from the routes'. It describes the service,
// so its operations send; a consumer receives on the same channels. The subject prefix is a
// channel parameter: the document is the same whatever EVENTS_NATS_SUBJECT_PREFIX a service has.

const prefix = {
  description:
    'EVENTS_NATS_SUBJECT_PREFIX, one or more tokens; subscribe to `{prefix}.events.>` to receive every message',
  default: 'plant-store',
  examples: ['plant-store'],
}

export function buildAsyncApiDocument() {
  return toJsonSchema({
    asyncapi: '3.0.0',
    info: {
      title: 'Plant Store event feed',
      version: '1.0.0',
      license: { name: 'MIT' },
      description:
        "Every event of the Plant Store log, exactly once and in log order, as CloudEvents 1.0 structured JSON messages on a NATS JetStream stream (EVENTS_NATS_STREAM, default PLANT_STORE). One owner's messages are in position order (their ids increasing). When an owner is erased their PlantCreated messages are purged from the stream and one OwnerErased message tells consumers to drop what they derived.",
    },
    defaultContentType: CLOUD_EVENTS_CONTENT_TYPE,
    channels: {
      plantCreated: {
        address: '{prefix}.events.PlantCreated.{pseudonym}',
        title: 'Plants created',
        description: "One message per plant created, on a subject that ends in its owner's pseudonym",
        parameters: {
          prefix,
          pseudonym: {
            description:
              "The owner's random pseudonym, opaque to consumers: an erasure purges the owner's messages by it",
          },
        },
        messages: { plantCreated: { $ref: '#/components/messages/PlantCreated' } },
      },
      ownerErased: {
        address: '{prefix}.events.OwnerErased',
        title: 'Owners erased',
        description: 'One message per erased owner, once their PlantCreated messages are purged',
        parameters: { prefix },
        messages: { ownerErased: { $ref: '#/components/messages/OwnerErased' } },
      },
    },
    operations: {
      sendPlantCreated: send(
        'plantCreated',
        'Publish a created plant',
        'A PlantCreated event of the log, published after its transaction commits',
      ),
      sendOwnerErased: send(
        'ownerErased',
        'Publish an erasure',
        "An OwnerErased event of the log, published before the owner's messages are purged",
      ),
    },
    components: {
      messages: {
        PlantCreated: message(
          'PlantCreated',
          'A plant was created',
          '#/components/schemas/PlantCreatedEvent',
        ),
        OwnerErased: message('OwnerErased', 'An owner was erased', '#/components/schemas/OwnerErasedEvent'),
      },
      schemas: { PlantCreatedEvent, OwnerErasedEvent, FeedHeaders },
    },
  })
}

// The service's operation on a channel: it sends the channel's one message.
function send(channel: string, title: string, summary: string) {
  return {
    action: 'send',
    title,
    summary,
    channel: { $ref: `#/channels/${channel}` },
    messages: [{ $ref: `#/channels/${channel}/messages/${channel}` }],
  }
}

function message(name: string, title: string, payload: string) {
  return {
    name,
    title,
    summary: title,
    contentType: CLOUD_EVENTS_CONTENT_TYPE,
    headers: { $ref: '#/components/schemas/FeedHeaders' },
    payload: { $ref: payload },
  }
}
