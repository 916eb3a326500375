// A stream's frames taken for the client and not yet pulled by the runtime, and the newest position
// it has pulled (where the stream reads again after dropping them).
export type QueuedFrame = { position?: bigint; bytes: Uint8Array }

// The most handed to the runtime at a time, so that a slow client is seen taking text regularly.
const CHUNK_BYTES = 64 * 1024

export function frameQueue() {
  let frames: QueuedFrame[] = []
  let bytes = 0
  let handedOut = -1n
  return {
    length: () => frames.length,
    bytes: () => bytes,
    handedOut: () => handedOut,
    // `position` went to the runtime without waiting here (or the stream starts after it).
    handedOutTo: (position: bigint) => {
      handedOut = position
    },
    push: (frame: QueuedFrame) => {
      frames.push(frame)
      bytes += frame.bytes.byteLength
    },
    // Every frame's text, for a last write; the queue is left empty.
    drain: (): Uint8Array[] => {
      const texts = frames.map((frame) => frame.bytes)
      frames = []
      bytes = 0
      return texts
    },
    // At most CHUNK_BYTES (or one frame), as one chunk for the runtime.
    nextChunk: (): Uint8Array => {
      let size = 0
      let count = 0
      for (const frame of frames) {
        if (count > 0 && size + frame.bytes.byteLength > CHUNK_BYTES) break
        size += frame.bytes.byteLength
        count++
      }
      const chunk = new Uint8Array(size)
      let offset = 0
      for (const { position, bytes: text } of frames.splice(0, count)) {
        chunk.set(text, offset)
        offset += text.byteLength
        if (position !== undefined) handedOut = position
      }
      bytes -= size
      return chunk
    },
  }
}
