import {
  type ApiError,
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  jetstreamManager,
  type PubAck,
  StorageType,
  type StreamInfo,
} from '@nats-io/jetstream'
import { createInbox, deferred, headers, type Msg, type NatsConnection } from '@nats-io/transport-node'
import type { FeedConfig } from '../config/config.ts'
import { Failure } from '../shared/errors.ts'
import { within } from '../shared/time-limit.ts'
import { feedFilter, type PublishedMessage } from './cloud-event.ts'
import { CLOUD_EVENTS_CONTENT_TYPE } from './feed-schemas.ts'

// Where the stream ends: its last sequence (any subject), and the log position of the last feed
// message in it (0: none). The stream, not the database, remembers how far the feed has gone: the
// log is published in position order, so every event up to that position is in it.
export type Tail = { sequence: number; position: bigint }

export type FeedStream = {
  // Creates the stream when it is missing (unless told not to); refuses one whose subjects miss
  // the feed's.
  ensure: () => Promise<void>
  readTail: () => Promise<Tail>
  publish: (messages: PublishedMessage[], after: Tail) => Promise<Published>
}

// `tail` is where the stream ends after the messages that went in; `failure` is why the rest
// did not (the tail must then be read again).
export type Published = { tail: Tail; published: number; failure?: unknown }

// Still written for instances of the previous version, which resume from it during an upgrade.
const TRANSACTION_HEADER = 'Plant-Store-Log-Transaction'
// JetStream's answers to more replicas than it can place: not clustered, or too few servers.
const REPLICAS_REFUSED = [10074, 10023]
// An ack normally comes in milliseconds; a lost one is given up soon, and the tail read again.
const PUBLISH_TIMEOUT_MS = 2000

export class StaleTail extends Error {
  override name = 'StaleTail'
}

// `create: false`: a missing stream is an error, not made (an erasure works on the stream it finds).
type StreamSettings = Pick<FeedConfig, 'stream' | 'subjectPrefix'> & { replicas?: number; create?: boolean }

export async function feedStream(nc: NatsConnection, settings: StreamSettings): Promise<FeedStream> {
  const { stream, subjectPrefix, replicas = 1, create = true } = settings
  const jsm = await jetstreamManager(nc, { timeout: PUBLISH_TIMEOUT_MS })
  const filter = feedFilter(subjectPrefix)
  return {
    ensure: () => ensureStream(jsm, stream, filter, create ? replicas : undefined),
    readTail: () => readTail(jsm, stream, filter),
    publish: (messages, after) => publishInOrder(nc, messages, after),
  }
}

// `replicas` undefined: a missing stream is not made.
async function ensureStream(
  jsm: JetStreamManager,
  stream: string,
  filter: string,
  replicas: number | undefined,
): Promise<void> {
  const info = await streamInfo(jsm, stream)
  if (info !== undefined) {
    const subjects = info.config.subjects ?? []
    if (subjects.some((pattern) => subjectCovers(pattern, filter))) return
    throw new Failure(
      'BAD_SETTING',
      `EVENTS_NATS_STREAM: the stream "${stream}" captures ${JSON.stringify(subjects)}, which does not cover "${filter}"`,
    )
  }
  if (replicas === undefined) throw new Failure('BAD_SETTING', `the NATS stream "${stream}" does not exist`)
  // Every setting of a stream the service creates is here (docs/feed.md; docs/operating.md, Scaling out).
  await jsm.streams
    .add({ name: stream, subjects: [filter], storage: StorageType.File, num_replicas: replicas })
    .catch((refused: unknown) => {
      if (refused instanceof JetStreamApiError && REPLICAS_REFUSED.includes(refused.code)) {
        throw new Failure(
          'BAD_SETTING',
          `EVENTS_NATS_REPLICAS: NATS cannot keep ${replicas} replicas of "${stream}": ${refused.message}`,
        )
      }
      throw refused
    })
}

// The stream's info; undefined when it does not exist.
export async function streamInfo(jsm: JetStreamManager, stream: string): Promise<StreamInfo | undefined> {
  return jsm.streams.info(stream).catch((error: unknown) => {
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)
      return undefined
    throw error
  })
}

// Whether the stream subject `pattern` captures every subject that `wanted` matches, token by
// token: `>` takes one or more remaining tokens, `*` exactly one.
export function subjectCovers(pattern: string, wanted: string): boolean {
  const have = pattern.split('.')
  const need = wanted.split('.')
  for (const [index, token] of have.entries()) {
    const other = need[index]
    if (other === undefined) return false
    if (token === '>') return true
    if (other === '>') return false
    if (token !== '*' && token !== other) return false
  }
  return have.length === need.length
}

async function readTail(jsm: JetStreamManager, stream: string, filter: string): Promise<Tail> {
  const { state } = await jsm.streams.info(stream)
  const last = await jsm.streams.getMessage(stream, { last_by_subj: filter })
  if (last === null) return { sequence: state.last_seq, position: 0n }
  const position = last.header.get('Nats-Msg-Id')
  if (!/^\d+$/.test(position)) {
    throw new Error(`the last message of "${stream}" on ${filter} (sequence ${last.seq}) has no log position`)
  }
  return { sequence: state.last_seq, position: BigInt(position) }
}

// All messages go out at once, each stating the stream sequence it must follow, so the server
// stores them in order or refuses the rest: a publisher whose idea of the tail is stale (another
// instance got there first) can never add anything. NATS checks Nats-Msg-Id before that
// expectation, so a message already in the stream comes back as a duplicate rather than refused;
// it counts as in place only at the sequence this publisher expected. Each message has a reply
// subject of its own on one subscription: a request per message (js.publish) costs three times
// as much.
async function publishInOrder(
  nc: NatsConnection,
  messages: PublishedMessage[],
  after: Tail,
): Promise<Published> {
  const answers = await sendAll(nc, messages, after)
  let tail = after
  let published = 0
  for (const [index, message] of messages.entries()) {
    const answer =
      answers[index] ?? new Error(`no answer for message ${message.id} within ${PUBLISH_TIMEOUT_MS} ms`)
    if (answer instanceof Error) return { tail, published, failure: answer }
    if (answer.seq !== tail.sequence + 1) {
      const failure = new StaleTail(
        `message ${message.id} is already in the stream at sequence ${answer.seq}`,
      )
      return { tail, published, failure }
    }
    if (!answer.duplicate) published++
    tail = { sequence: answer.seq, position: BigInt(message.id) }
  }
  return { tail, published }
}

// Publishes every message and collects the answers that come within the timeout, by index.
async function sendAll(nc: NatsConnection, messages: PublishedMessage[], after: Tail): Promise<Answer[]> {
  const inbox = createInbox()
  const answers: Answer[] = new Array(messages.length)
  let waiting = messages.length
  const allAnswered = deferred<void>()
  const subscription = nc.subscribe(`${inbox}.*`, {
    callback: (error, reply) => {
      if (error) return
      const index = Number(reply.subject.slice(inbox.length + 1))
      if (answers[index] !== undefined) return
      answers[index] = readAnswer(reply)
      if (--waiting === 0) allAnswered.resolve()
    },
  })
  try {
    for (const [index, message] of messages.entries()) {
      const messageHeaders = headers()
      messageHeaders.set('Content-Type', CLOUD_EVENTS_CONTENT_TYPE)
      messageHeaders.set('Nats-Msg-Id', message.id)
      messageHeaders.set(TRANSACTION_HEADER, message.transactionId)
      messageHeaders.set('Nats-Expected-Last-Sequence', String(after.sequence + index))
      nc.publish(message.subject, message.body, { headers: messageHeaders, reply: `${inbox}.${index}` })
    }
    await within(allAnswered, PUBLISH_TIMEOUT_MS)
  } finally {
    subscription.unsubscribe()
  }
  return answers
}

type Answer = { seq: number; duplicate: boolean } | Error

// JetStream's answer to a publish: the stored sequence, or why not. An empty answer is NATS
// saying that no stream captures the subject.
function readAnswer(reply: Msg): Answer {
  if (reply.data.length === 0)
    return new Error('no stream answered: is JetStream on, and does the stream exist?')
  try {
    const { seq, duplicate, error } = reply.json<Partial<PubAck> & { error?: ApiError }>()
    if (error || typeof seq !== 'number') {
      return new Error(`JetStream refused the message: ${error?.description} (${error?.err_code})`)
    }
    return { seq, duplicate: duplicate === true }
  } catch {
    return new Error('JetStream answered something that is not JSON')
  }
}
