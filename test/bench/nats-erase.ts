// How long step 3 of an erasure takes for an owner with many messages: each is erased on disk by a
// request of its own (src/feed/purge-owner.ts), on a nats-server of the bench's own.
// Run: bun test/bench/nats-erase.ts [messages]   (nats-server on the PATH or in /usr/sbin)
import process from 'node:process'
import { jetstream, jetstreamManager } from '@nats-io/jetstream'
import { connect } from '@nats-io/transport-node'
import { plantSubject } from '../../src/feed/cloud-event.ts'
import { purgeOwner } from '../../src/feed/purge-owner.ts'
import { startNatsServer } from '../support/nats-cluster.ts'

const MESSAGES = Number(process.argv[2] ?? 20_000)

const nats = await startNatsServer()
const nc = await connect({ servers: nats.url })
try {
  const jsm = await jetstreamManager(nc)
  const js = jetstream(nc)
  await jsm.streams.add({ name: 'BENCH', subjects: ['bench.events.>'] })
  const body = (index: number) =>
    JSON.stringify({ owner: 'alice', data: { name: `plant ${index}`.padEnd(100, '.') } })
  for (let index = 0; index < MESSAGES; index += 500) {
    const batch = Array.from({ length: Math.min(500, MESSAGES - index) }, (_, offset) =>
      js.publish(plantSubject('bench', 'a11ce'), body(index + offset)),
    )
    await Promise.all(batch)
  }
  const started = performance.now()
  await purgeOwner(
    nc,
    jsm,
    { stream: 'BENCH', subjectPrefix: 'bench' },
    { pseudonym: 'a11ce', owner: 'alice' },
  )
  const seconds = (performance.now() - started) / 1000
  const left = (await jsm.streams.info('BENCH')).state.messages
  console.log(
    `erased ${MESSAGES.toLocaleString('en')} messages in ${seconds.toFixed(2)} s (${Math.round(MESSAGES / seconds).toLocaleString('en')}/s); ${left} left`,
  )
} finally {
  await nc.close()
  nats.stop()
}
