// A minimal reproduction, kept as the record (docs/live-changes.md, Known limit): under Bun, a response body
// that errors while its client has stopped reading does not always close the connection.
//
//   bun test/changes/bun-reset-socket.repro.ts [runs]
//
// Each run: a Bun.serve whose body is a pull-driven ReadableStream of 64 KiB chunks; a client on a
// raw socket reads the response head and pauses; once the body has not been pulled for 500 ms (the
// socket is backed up) it errors, as the change stream resets a stalled client. The client then
// reads on: the connection should end (reset, or FIN after the data) within 5 s. Each fallback
// named after "with" is tried on top: `timeout` sets server.timeout(request, 1) as the body errors.
import { connect } from 'node:net'

type Fallback = 'none' | 'timeout'

async function once(fallback: Fallback): Promise<'closed' | 'open'> {
  let errorBody = () => {}
  const server = Bun.serve({
    hostname: '127.0.0.1',
    port: 0,
    fetch: (request, bun) => {
      const chunk = new Uint8Array(64 * 1024).fill(120)
      let lastPull = Date.now()
      let controller: ReadableStreamDefaultController<Uint8Array> | undefined
      const watch = setInterval(() => {
        if (Date.now() - lastPull > 500) errorBody()
      }, 100)
      errorBody = () => {
        clearInterval(watch)
        if (fallback === 'timeout') bun.timeout(request, 1)
        setTimeout(() => controller?.error(undefined), 0)
      }
      return new Response(
        new ReadableStream<Uint8Array>(
          {
            start: (c) => {
              controller = c
            },
            pull: (c) => {
              lastPull = Date.now()
              c.enqueue(chunk)
            },
          },
          { highWaterMark: 0 },
        ),
        { headers: { 'content-type': 'text/event-stream' } },
      )
    },
  })
  const socket = connect(server.port ?? 0, '127.0.0.1')
  const ended = new Promise<'closed'>((resolve) => {
    socket.on('error', () => resolve('closed'))
    socket.on('end', () => resolve('closed'))
    socket.on('close', () => resolve('closed'))
  })
  const head = new Promise<void>((resolve) =>
    socket.once('data', () => {
      socket.pause()
      resolve()
    }),
  )
  socket.write('GET / HTTP/1.1\r\nHost: repro\r\n\r\n')
  await head
  await Bun.sleep(2000)
  socket.resume()
  const result = await Promise.race([ended, Bun.sleep(5000).then(() => 'open' as const)])
  socket.destroy()
  server.stop(true)
  return result
}

const runs = Number(process.argv[2] ?? 10)
for (const fallback of ['none', 'timeout'] as Fallback[]) {
  let open = 0
  for (let run = 0; run < runs; run++) if ((await once(fallback)) === 'open') open++
  console.log(`with ${fallback}: the connection stayed open in ${open} of ${runs} runs`)
}
