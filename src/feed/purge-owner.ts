import { type JetStreamManager, jetstream } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import type { FeedConfig } from '../config.ts'
import { Failure } from '../errors.ts'
import { legacyPlantSubject, plantSubject } from './cloud-event.ts'

// The legacy messages are read this many at a time.
const SCAN_BATCH = 1000
// A fetch that brings nothing within this long: the scan has read every message there was.
const SCAN_IDLE_MS = 2000

// Step 3 of an erasure (CONTRACT §12): every message of the owner leaves the stream. Their
// PlantCreated messages share one subject, purged at once; those published before the log was
// erasable have no token, so they are found by the CloudEvent's `owner` and deleted one by one,
// erased on disk (the scan is skipped when the stream holds none of them, as it will once the
// upgrade's messages have all been erased or expired).
export async function purgeOwner(
  nc: NatsConnection,
  jsm: JetStreamManager,
  { stream, subjectPrefix }: Pick<FeedConfig, 'stream' | 'subjectPrefix'>,
  { pseudonym, owner }: { pseudonym: string; owner: string },
): Promise<void> {
  const legacy = legacyPlantSubject(subjectPrefix)
  const info = await jsm.streams.info(stream, { subjects_filter: legacy })
  const named = `the NATS stream "${stream}" (EVENTS_NATS_STREAM)`
  if (info.config.deny_purge) throw new Failure('PURGE_REFUSED', `${named} refuses purges (deny_purge)`)
  await jsm.streams.purge(stream, { filter: plantSubject(subjectPrefix, pseudonym) })
  if ((info.state.subjects?.[legacy] ?? 0) === 0) return
  const sequences = await legacyMessagesOf(nc, stream, legacy, owner)
  if (sequences.length === 0) return
  if (info.config.deny_delete) {
    throw new Failure(
      'PURGE_REFUSED',
      `${named} refuses deletes (deny_delete), and holds ${sequences.length} message(s) of the owner on ${legacy}`,
    )
  }
  for (const sequence of sequences) await jsm.streams.deleteMessage(stream, sequence, true)
}

// The sequences of the messages on `subject` whose CloudEvent names `owner`, read in order by an
// ordered consumer (one of its own, gone when the scan ends; one subject as a string, which
// servers before 2.10 take too).
async function legacyMessagesOf(
  nc: NatsConnection,
  stream: string,
  subject: string,
  owner: string,
): Promise<number[]> {
  const consumer = await jetstream(nc).consumers.get(stream, { filter_subjects: subject })
  const found: number[] = []
  for (;;) {
    const batch = await consumer.fetch({ max_messages: SCAN_BATCH, expires: SCAN_IDLE_MS })
    let read = 0
    let last = false
    for await (const message of batch) {
      read++
      if (ownerOf(message.string()) === owner) found.push(message.seq)
      // Nothing after it: done, without waiting for the fetch to expire.
      last = message.info.pending === 0
      if (last) break
    }
    if (read === 0 || last) return found
  }
}

function ownerOf(body: string): unknown {
  try {
    return (JSON.parse(body) as { owner?: unknown }).owner
  } catch {
    return undefined
  }
}
