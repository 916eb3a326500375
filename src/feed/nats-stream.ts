import {
  JetStreamApiCodes,
  JetStreamApiError,
  type JetStreamManager,
  jetstreamManager,
  StorageType,
} from '@nats-io/jetstream'
import { createInbox, headers, type NatsConnection } from '@nats-io/transport-node'
import { ConfigError, type FeedConfig } from '../config.ts'
import { LOG_START, type LogCursor } from '../store/event-log.ts'
import { aborted } from './abort.ts'
import { CLOUD_EVENTS_CONTENT_TYPE, type FeedMessage } from './cloud-event.ts'
import { feedFilter, subjectCovers } from './subjects.ts'

// Where the stream ends: its last sequence (any subject), and the log cursor of the last feed
// message in it. The stream, not the database, remembers how far the feed has gone.
export type Tail = { sequence: number; cursor: LogCursor }

export type FeedStream = {
  // Creates the stream when it is missing; refuses one whose subjects miss the feed's.
  ensure: () => Promise<void>
  readTail: () => Promise<Tail>
  publish: (messages: FeedMessage[], after: Tail) => Promise<Published>
}

// `tail` is where the stream ends after the messages that went in; `failure` is why the rest
// did not (the tail must then be read again).
export type Published = { tail: Tail; published: number; failure?: unknown }

const TRANSACTION_HEADER = 'Plant-Store-Log-Transaction'
// An ack normally comes in milliseconds; a lost one is given up soon, and the tail read again.
const PUBLISH_TIMEOUT_MS = 2000

export class StaleTail extends Error {
  override name = 'StaleTail'
}

export async function feedStream(
  nc: NatsConnection,
  { stream, subjectPrefix }: Pick<FeedConfig, 'stream' | 'subjectPrefix'>,
): Promise<FeedStream> {
  const jsm = await jetstreamManager(nc, { timeout: PUBLISH_TIMEOUT_MS })
  const filter = feedFilter(subjectPrefix)
  return {
    ensure: () => ensureStream(jsm, stream, filter),
    readTail: () => readTail(jsm, stream, filter),
    publish: (messages, after) => publishInOrder(nc, messages, after),
  }
}

async function ensureStream(jsm: JetStreamManager, stream: string, filter: string): Promise<void> {
  try {
    const info = await jsm.streams.info(stream)
    const subjects = info.config.subjects ?? []
    if (!subjects.some((pattern) => subjectCovers(pattern, filter))) {
      throw new ConfigError(
        `EVENTS_NATS_STREAM: the stream "${stream}" captures ${JSON.stringify(subjects)}, which does not cover "${filter}"`,
      )
    }
  } catch (error) {
    if (!(error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)) throw error
    // Every setting of a stream the service creates is here (CONTRACT §8).
    await jsm.streams.add({ name: stream, subjects: [filter], storage: StorageType.File })
  }
}

async function readTail(jsm: JetStreamManager, stream: string, filter: string): Promise<Tail> {
  const { state } = await jsm.streams.info(stream)
  if (state.messages === 0) return { sequence: state.last_seq, cursor: LOG_START }
  const last = await jsm.streams.getMessage(stream, { last_by_subj: filter })
  if (last === null) return { sequence: state.last_seq, cursor: LOG_START }
  const position = last.header.get('Nats-Msg-Id')
  const transactionId = last.header.get(TRANSACTION_HEADER)
  if (!/^\d+$/.test(position) || !/^\d+$/.test(transactionId)) {
    throw new Error(`the last message of "${stream}" on ${filter} (sequence ${last.seq}) has no log cursor`)
  }
  return {
    sequence: state.last_seq,
    cursor: { transactionId: BigInt(transactionId), position: BigInt(position) },
  }
}

// All messages go out at once, each stating the stream sequence it must follow, so the server
// stores them in order or refuses the rest: a publisher whose idea of the tail is stale (another
// instance got there first) can never add anything. NATS checks Nats-Msg-Id before that
// expectation, so a message already in the stream comes back as a duplicate rather than refused;
// it counts as in place only at the sequence this publisher expected. Each message has a reply
// subject of its own on one subscription: a request per message (js.publish) costs three times
// as much.
async function publishInOrder(nc: NatsConnection, messages: FeedMessage[], after: Tail): Promise<Published> {
  const answers = await sendAll(nc, messages, after)
  let tail = after
  let published = 0
  for (const [index, message] of messages.entries()) {
    const answer = answers[index] ?? {
      error: `no answer for message ${message.id} within ${PUBLISH_TIMEOUT_MS} ms`,
    }
    if ('error' in answer) return { tail, published, failure: new Error(answer.error) }
    if (answer.seq !== tail.sequence + 1) {
      const failure = new StaleTail(
        `message ${message.id} is already in the stream at sequence ${answer.seq}`,
      )
      return { tail, published, failure }
    }
    if (!answer.duplicate) published++
    tail = {
      sequence: answer.seq,
      cursor: { transactionId: BigInt(message.transactionId), position: BigInt(message.id) },
    }
  }
  return { tail, published }
}

// Publishes every message and collects the answers that come within the timeout, by index.
async function sendAll(nc: NatsConnection, messages: FeedMessage[], after: Tail): Promise<Answer[]> {
  const inbox = createInbox()
  const answers: Answer[] = new Array(messages.length)
  let waiting = messages.length
  const allAnswered = new AbortController()
  const subscription = nc.subscribe(`${inbox}.*`, {
    callback: (error, reply) => {
      if (error) return
      const index = Number(reply.subject.slice(inbox.length + 1))
      if (answers[index] !== undefined) return
      answers[index] = readAnswer(reply.data)
      if (--waiting === 0) allAnswered.abort()
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
    await aborted(allAnswered.signal, AbortSignal.timeout(PUBLISH_TIMEOUT_MS))
  } finally {
    subscription.unsubscribe()
  }
  return answers
}

type Answer = { seq: number; duplicate: boolean } | { error: string }

// JetStream's answer to a publish: the stored sequence, or why not. An empty answer is NATS
// saying that no stream captures the subject.
function readAnswer(data: Uint8Array): Answer {
  if (data.length === 0) return { error: 'no stream answered: is JetStream on, and does the stream exist?' }
  try {
    const answer = JSON.parse(new TextDecoder().decode(data)) as {
      seq?: number
      duplicate?: boolean
      error?: { description?: string; err_code?: number }
    }
    if (answer.error || typeof answer.seq !== 'number') {
      return {
        error: `JetStream refused the message: ${answer.error?.description} (${answer.error?.err_code})`,
      }
    }
    return { seq: answer.seq, duplicate: answer.duplicate === true }
  } catch {
    return { error: 'JetStream answered something that is not JSON' }
  }
}
