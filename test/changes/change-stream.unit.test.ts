import { describe, expect, test } from 'bun:test'
import type { Frame } from '../../src/changes/change-frame.ts'
import { createChangeStream } from '../../src/changes/change-stream.ts'

// Frames of 100 bytes, their positions in the text.
const frame = (position: number): Frame => ({
  position: BigInt(position),
  bytes: new TextEncoder().encode(`id: ${position}\n${'.'.repeat(90)}\n`),
})
const positionsIn = (text: string) => [...text.matchAll(/^id: (\d+)$/gm)].map((match) => Number(match[1]))

// Live changes (docs/live-changes.md), no gap, at the stream itself: the database is a list of frames, the log's follower
// the test offering them.
describe('a change stream going live with what it held', () => {
  test('held events that, with the read ones, pass the bound: none is skipped, all come once in order', async () => {
    // given: five events in the database, a bound of 1,000 bytes, and a first read that is slow
    const database = [1, 2, 3, 4, 5].map(frame)
    let settled = 5
    let releaseRead = () => {}
    let firstRead = true
    const stream = createChangeStream({
      owner: 'o',
      expiresAt: Number.MAX_SAFE_INTEGER,
      maxBufferedBytes: 1000,
      stallMs: 60_000,
      now: Date.now,
      readAfter: async (after) => {
        const upTo = settled
        if (firstRead) {
          firstRead = false
          await new Promise<void>((resolve) => (releaseRead = resolve))
        }
        const frames = database.filter((f) => f.position > after && f.position <= BigInt(upTo))
        return { frames, complete: true }
      },
      onClosed: () => {},
    })
    stream.startAfter(0n, false)
    const reading = stream.catchUp()
    // when: nine more are created and offered live while that read runs (900 bytes: within the
    // bound, but not with the five read)
    for (let position = 6; position <= 14; position++) {
      database.push(frame(position))
      settled = position
      stream.offer(frame(position))
    }
    releaseRead()
    await reading
    // then
    const reader = stream.body.getReader()
    let text = ''
    while (positionsIn(text).length < 14) {
      const next = await Promise.race([reader.read(), Bun.sleep(1000).then(() => undefined)])
      if (next === undefined || next.done) break
      text += new TextDecoder().decode(next.value)
    }
    expect(positionsIn(text)).toEqual(Array.from({ length: 14 }, (_, index) => index + 1))
    stream.end('done')
  })
})
