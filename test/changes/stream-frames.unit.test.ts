import { expect, test } from 'bun:test'
import { frameQueue } from '../../src/changes/frame-queue.ts'
import { heldFrames } from '../../src/changes/held-frames.ts'

const frame = (position: number, size: number) => ({
  position: BigInt(position),
  bytes: new Uint8Array(size),
})

test('given frames queued, when the runtime pulls, then a chunk holds at most 64 KiB and moves what was handed out', () => {
  const queue = frameQueue()
  for (let position = 1; position <= 3; position++) queue.push(frame(position, 30 * 1024))
  expect(queue.nextChunk().byteLength).toBe(60 * 1024)
  expect(queue.handedOut()).toBe(2n)
  expect(queue.bytes()).toBe(30 * 1024)
  expect(queue.nextChunk().byteLength).toBe(30 * 1024)
  expect(queue.length()).toBe(0)
})

test('given a frame larger than a chunk, when the runtime pulls, then it goes out whole', () => {
  const queue = frameQueue()
  queue.push(frame(1, 100 * 1024))
  expect(queue.nextChunk().byteLength).toBe(100 * 1024)
})

test('given frames queued, when drained, then their texts come out in order and nothing stays', () => {
  const queue = frameQueue()
  queue.push({ bytes: new Uint8Array([1]) })
  queue.push(frame(1, 2))
  expect(queue.drain().map((bytes) => bytes.byteLength)).toEqual([1, 2])
  expect([queue.length(), queue.bytes()]).toEqual([0, 0])
})

test('given frames held within the bound, when released, then they come out as held', () => {
  const held = heldFrames(10)
  expect([held.hold(frame(1, 4)), held.hold(frame(2, 6))]).toEqual([true, true])
  expect(held.release()).toEqual({ frames: [frame(1, 4), frame(2, 6)], missed: false })
})

test('given frames past the bound, when released, then none comes out and the stream knows it missed some', () => {
  const held = heldFrames(10)
  held.hold(frame(1, 6))
  expect(held.hold(frame(2, 6))).toBe(false)
  held.hold(frame(3, 1))
  expect(held.release()).toEqual({ frames: [], missed: true })
  expect(held.release()).toEqual({ frames: [], missed: false })
})
