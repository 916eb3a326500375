import { Buffer } from 'node:buffer'
import type { Socket } from 'bun'

// 'reset': every connection is closed and each new one is reset on arrival, as a database that
// went away. 'silent': sockets stay open but every byte is dropped, as a network that stopped
// answering.
export type CutMode = 'reset' | 'silent'

export type TcpProxy = {
  port: number
  cut: (how?: CutMode) => void
  // Open again; connections silenced mid-conversation cannot resume, so they are closed.
  restore: () => void
  stop: () => void
  // With `record`: every byte each connection sent towards the target, one array per connection
  // in the order they were opened (kept whole, so that no value is cut between two reads).
  sent: () => Uint8Array[]
}

export type TcpProxyOptions = { record?: boolean }

// Bytes a socket did not take yet (a write may be partial); flushed on `drain`.
type Outbox = { socket?: Socket<unknown>; queued: Uint8Array[] }
type Link = { toClient: Outbox; toUpstream: Outbox; closed: boolean; sent?: Uint8Array[] }

// A TCP forwarder between the service and PostgreSQL, so a test can take the database away
// without touching the shared server.
export function startTcpProxy(
  target: { hostname: string; port: number },
  { record = false }: TcpProxyOptions = {},
): TcpProxy {
  const links = new Set<Link>()
  const recorded: Uint8Array[][] = []
  let mode: 'open' | CutMode = 'open'

  const closeLink = (link: Link) => {
    if (link.closed) return
    link.closed = true
    links.delete(link)
    link.toUpstream.socket?.terminate()
    link.toClient.socket?.terminate()
  }
  const closeAll = () => {
    for (const link of [...links]) closeLink(link)
  }
  const send = (link: Link, outbox: Outbox, chunk: Uint8Array) => {
    if (mode !== 'open' || link.closed) return
    outbox.queued.push(new Uint8Array(chunk))
    flush(outbox)
  }

  const listener = Bun.listen<Link>({
    hostname: '127.0.0.1',
    port: 0,
    socket: {
      open(client) {
        const link: Link = {
          toClient: { socket: client, queued: [] },
          toUpstream: { queued: [] },
          closed: false,
        }
        if (record) {
          link.sent = []
          recorded.push(link.sent)
        }
        client.data = link
        if (mode === 'reset') return closeLink(link)
        links.add(link)
        if (mode === 'silent') return
        Bun.connect<Link>({
          hostname: target.hostname,
          port: target.port,
          data: link,
          socket: {
            data: (_upstream, chunk) => send(link, link.toClient, chunk),
            drain: () => flush(link.toUpstream),
            close: () => closeLink(link),
            error: () => closeLink(link),
          },
        }).then(
          (upstream) => {
            if (link.closed) return upstream.terminate()
            link.toUpstream.socket = upstream
            flush(link.toUpstream)
          },
          () => closeLink(link),
        )
      },
      data: (client, chunk) => {
        client.data.sent?.push(new Uint8Array(chunk))
        send(client.data, client.data.toUpstream, chunk)
      },
      drain: (client) => flush(client.data.toClient),
      close: (client) => closeLink(client.data),
      error: (client) => closeLink(client.data),
    },
  })

  return {
    port: listener.port,
    cut: (how = 'reset') => {
      mode = how
      if (how === 'reset') closeAll()
    },
    restore: () => {
      if (mode === 'silent') closeAll()
      mode = 'open'
    },
    stop: () => {
      closeAll()
      listener.stop(true)
    },
    sent: () => recorded.map((chunks) => Buffer.concat(chunks)),
  }
}

function flush(outbox: Outbox): void {
  const socket = outbox.socket
  if (!socket) return
  while (outbox.queued.length > 0) {
    const chunk = outbox.queued[0] as Uint8Array
    const written = socket.write(chunk)
    if (written < chunk.byteLength) {
      outbox.queued[0] = chunk.subarray(Math.max(written, 0))
      return
    }
    outbox.queued.shift()
  }
}
