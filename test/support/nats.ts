import { jetstream, jetstreamManager, type StreamConfig } from '@nats-io/jetstream'
import { connect, type NatsConnection } from '@nats-io/transport-node'

// Tests always need a real NATS with JetStream: a missing server fails the run, it never skips.
export const TEST_NATS_URL = process.env.TEST_NATS_URL ?? 'nats://127.0.0.1:4222'

// Where the NATS of the tests listens, for a proxy put in front of it.
export function natsAddress(): { hostname: string; port: number } {
  const url = new URL(TEST_NATS_URL)
  return { hostname: url.hostname, port: Number(url.port || 4222) }
}

export type FeedMessageSeen = {
  sequence: number
  subject: string
  headers: Record<string, string[]>
  body: string
}

export type TestFeed = {
  stream: string
  prefix: string
  // The server's environment for this feed.
  env: Record<string, string>
  nc: NatsConnection
  // Every message in the stream, read by an ordered consumer in stream order.
  read: () => Promise<FeedMessageSeen[]>
  // Resolves once the stream holds `count` messages (or throws after `timeoutMs`).
  waitFor: (count: number, timeoutMs?: number) => Promise<FeedMessageSeen[]>
  // Creates the stream beforehand, with settings of the test's choosing.
  create: (config?: Partial<StreamConfig>) => Promise<void>
  drop: () => Promise<void>
}

// A stream and subject prefix of the test's own, so tests never see each other's messages.
export async function createTestFeed(label: string, url = TEST_NATS_URL): Promise<TestFeed> {
  const nc = await connect({ servers: TEST_NATS_URL, timeout: 5000 }).catch((error: unknown) => {
    throw new Error(`NATS with JetStream is required for the tests (${TEST_NATS_URL}): ${String(error)}`)
  })
  const jsm = await jetstreamManager(nc)
  const js = jetstream(nc)
  const unique = `${label.replace(/\W/g, '_')}_${Date.now().toString(36)}_${crypto.randomUUID().slice(0, 8)}`
  const stream = `TEST_${unique}`
  const prefix = `test.${unique}`
  const count = async () => {
    try {
      return (await jsm.streams.info(stream)).state.messages
    } catch {
      return 0
    }
  }
  const read = async (): Promise<FeedMessageSeen[]> => {
    const total = await count()
    if (total === 0) return []
    const consumer = await js.consumers.get(stream)
    const seen: FeedMessageSeen[] = []
    const messages = await consumer.consume()
    for await (const message of messages) {
      const headers: Record<string, string[]> = {}
      for (const key of message.headers?.keys() ?? []) headers[key] = message.headers?.values(key) ?? []
      seen.push({ sequence: message.seq, subject: message.subject, headers, body: message.string() })
      if (seen.length >= total) break
    }
    await messages.close()
    return seen
  }
  return {
    stream,
    prefix,
    env: { EVENTS_NATS_URL: url, EVENTS_NATS_STREAM: stream, EVENTS_NATS_SUBJECT_PREFIX: prefix },
    nc,
    read,
    waitFor: async (expected, timeoutMs = 15_000) => {
      const deadline = Date.now() + timeoutMs
      let last = 0
      while (Date.now() < deadline) {
        last = await count()
        if (last >= expected) return read()
        await Bun.sleep(50)
      }
      throw new Error(`the stream ${stream} holds ${last} messages, expected ${expected}`)
    },
    create: async (config = {}) => {
      await jsm.streams.add({ name: stream, subjects: [`${prefix}.events.>`], ...config })
    },
    drop: async () => {
      await jsm.streams.delete(stream).catch(() => false)
      await nc.close()
    },
  }
}

// Checks the stream against the log: exactly the positions expected, each once, in this order.
export function positionsOf(messages: FeedMessageSeen[]): string[] {
  return messages.map((message) => message.headers['Nats-Msg-Id']?.[0] ?? '?')
}
