// Streams a JSON array from batches pulled on demand, so a long listing never sits in memory.
export function jsonArrayStream<T>(batches: AsyncIterable<T[]>): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  const iterator = batches[Symbol.asyncIterator]()
  let started = false
  return new ReadableStream({
    async pull(controller) {
      const { done, value } = await iterator.next()
      if (done) {
        controller.enqueue(encoder.encode(started ? ']' : '[]'))
        controller.close()
        return
      }
      if (value.length === 0) return
      const items = value.map((item) => JSON.stringify(item)).join(',')
      controller.enqueue(encoder.encode(`${started ? ',' : '['}${items}`))
      started = true
    },
    async cancel() {
      await iterator.return?.()
    },
  })
}
