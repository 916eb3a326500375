// Streams a JSON array from parts pulled on demand (each the text of one or more elements,
// separated by commas), so a long listing never sits in memory.
export function jsonArrayStream(parts: AsyncIterable<string>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  const iterator = parts[Symbol.asyncIterator]()
  let started = false
  return new ReadableStream({
    async pull(controller) {
      const { done, value } = await iterator.next()
      if (done) {
        controller.enqueue(encoder.encode(started ? ']' : '[]'))
        controller.close()
        return
      }
      if (value === '') return
      controller.enqueue(encoder.encode(`${started ? ',' : '['}${value}`))
      started = true
    },
    async cancel() {
      await iterator.return?.()
    },
  })
}
