import { type JetStreamManager, type JsMsg, jetstream } from '@nats-io/jetstream'
import type { NatsConnection } from '@nats-io/transport-node'
import type { FeedConfig } from '../config/config.ts'
import { Failure } from '../shared/errors.ts'
import { legacyPlantSubject, plantSubject } from './cloud-event.ts'

// The messages are read this many at a time.
const SCAN_BATCH = 1000
// A fetch that brings nothing within this long: the scan has read every message there was.
const SCAN_IDLE_MS = 2000
// Erasures asked for at once: each is a request of its own, answered once the bytes are overwritten.
const ERASES_IN_FLIGHT = 64

// Step 3 of an erasure (docs/erasure.md): every message of the owner leaves the stream, and leaves its
// files. A purge only marks messages removed: nats-server keeps their bytes in its block files
// until a block is emptied or compacted, which may be never (2.9; test/erasure/nats-files.e2e.test.ts
// looks). A delete with erase overwrites the message where it lies, on every replica. So each
// message of the owner is found by its sequence and erased: their PlantCreated messages by their
// subject, and those published before the log was erasable (no subject token) by the CloudEvent's
// `owner` (skipped when the stream holds none, as it will once they have all been erased or
// expired). A purge of the owner's subject then leaves nothing of them in the stream's index.
export async function purgeOwner(
  nc: NatsConnection,
  jsm: JetStreamManager,
  { stream, subjectPrefix }: Pick<FeedConfig, 'stream' | 'subjectPrefix'>,
  { pseudonym, owner }: { pseudonym: string; owner: string },
): Promise<void> {
  const subject = plantSubject(subjectPrefix, pseudonym)
  const legacy = legacyPlantSubject(subjectPrefix)
  const [own, old] = await Promise.all(
    [subject, legacy].map((filter) => jsm.streams.info(stream, { subjects_filter: filter })),
  )
  const named = `the NATS stream "${stream}" (EVENTS_NATS_STREAM)`
  if (own?.config.deny_delete) {
    throw new Failure(
      'PURGE_REFUSED',
      `${named} refuses deletes (deny_delete): the owner's messages cannot be erased`,
    )
  }
  if (own?.config.deny_purge) throw new Failure('PURGE_REFUSED', `${named} refuses purges (deny_purge)`)
  const owned = own?.state.subjects?.[subject] ?? 0
  if (owned > 0) await erase(jsm, stream, await sequencesOf(nc, stream, subject, owned))
  const legacyCount = old?.state.subjects?.[legacy] ?? 0
  if (legacyCount > 0) {
    const named = (message: JsMsg) => ownerOf(message.string()) === owner
    await erase(jsm, stream, await sequencesOf(nc, stream, legacy, legacyCount, named))
  }
  await jsm.streams.purge(stream, { filter: subject })
}

async function erase(jsm: JetStreamManager, stream: string, sequences: number[]): Promise<void> {
  let next = 0
  const eraser = async () => {
    for (let sequence = sequences[next++]; sequence !== undefined; sequence = sequences[next++]) {
      await jsm.streams.deleteMessage(stream, sequence, true)
    }
  }
  await Promise.all(Array.from({ length: Math.min(ERASES_IN_FLIGHT, sequences.length) }, eraser))
}

// The sequences of the `count` messages on `subject` (those of them `wanted` keeps), read in order
// by an ordered consumer of its own, gone when the scan ends (one subject as a string, which servers
// before 2.10 take too); only the headers travel unless the body is looked at.
async function sequencesOf(
  nc: NatsConnection,
  stream: string,
  subject: string,
  count: number,
  wanted?: (message: JsMsg) => boolean,
): Promise<number[]> {
  const consumer = await jetstream(nc).consumers.get(stream, {
    filter_subjects: subject,
    headers_only: wanted === undefined,
  })
  const found: number[] = []
  let read = 0
  for (;;) {
    const batch = await consumer.fetch({ max_messages: SCAN_BATCH, expires: SCAN_IDLE_MS })
    const before = read
    let last = false
    for await (const message of batch) {
      read++
      if (wanted === undefined || wanted(message)) found.push(message.seq)
      // Nothing after it: done, without waiting for the fetch to expire.
      last = message.info.pending === 0 || read >= count
      if (last) break
    }
    if (read === before || last) return found
  }
}

function ownerOf(body: string): unknown {
  try {
    return (JSON.parse(body) as { owner?: unknown }).owner
  } catch {
    return undefined
  }
}
