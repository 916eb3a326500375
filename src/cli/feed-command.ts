import process from 'node:process'
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import type { Config } from '../config/config.ts'
import { countEventsAfter, logHead } from '../event-log/reading.ts'
import { feedStream } from '../feed/nats-stream.ts'
import { isPublishable } from '../feed/publishable.ts'
import { Failure } from '../shared/errors.ts'
import { command } from './command.ts'
import { withStorage } from './storage.ts'

export const feedStatusCommand = command({
  name: 'feed status',
  purpose: 'the last position in the NATS stream beside the head of the log',
  reads: ['storage', 'feed'],
  refusals: 'NATS does not answer, or the stream does not exist yet',
  run: (_parsed, config) => showFeedStatus(config),
})

// The last position in the stream beside the head of the log, and how many events the feed has
// still to publish (an erased owner's never are); exit 1 when NATS or the stream cannot be read.
async function showFeedStatus(config: Config): Promise<number> {
  const feed = config.feed
  if (!feed) throw new Failure('BAD_SETTING', 'EVENTS_NATS_URL is not set: the feed is off')
  const nc = await connect({ servers: feed.servers, timeout: 5000 }).catch((error: unknown) => {
    process.stderr.write(`NATS does not answer at ${feed.servers.join(',')}: ${String(error)}\n`)
    return undefined
  })
  if (!nc) return 1
  try {
    const { position } = await (await feedStream(nc, feed)).readTail()
    return await withStorage(config, async (db) => {
      const [head, behind] = await Promise.all([logHead(db), countEventsAfter(db, position, isPublishable)])
      const at = position === 0n ? 'nothing published yet' : `last published position ${position}`
      const state = behind === 0 ? 'up to date' : `${behind} event(s) behind`
      process.stdout.write(
        `feed ${feed.stream}: ${at}; log head: position ${head.position} (${head.events} events); ${state}\n`,
      )
      return 0
    })
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) {
      process.stderr.write(
        `the stream ${feed.stream} does not exist yet: a server with the feed on creates it\n`,
      )
      return 1
    }
    throw error
  } finally {
    await nc.close()
  }
}
