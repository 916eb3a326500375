// Splits a byte or text stream into lines without holding more than a chunk and a line.
export async function* readLines(chunks: AsyncIterable<Uint8Array | string>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  let pending = ''
  for await (const chunk of chunks) {
    pending += typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true })
    let start = 0
    for (let newline = pending.indexOf('\n'); newline >= 0; newline = pending.indexOf('\n', start)) {
      yield pending.slice(start, newline).replace(/\r$/, '')
      start = newline + 1
    }
    pending = pending.slice(start)
  }
  pending += decoder.decode()
  if (pending !== '') yield pending
}
