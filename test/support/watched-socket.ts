import net from 'node:net'
import postgres from 'postgres'

export type WatchedClient = {
  sql: postgres.Sql
  // The socket of the connection opened last, for a test to stand in for the network.
  socket: () => net.Socket
}

// A postgres.js client of one connection whose socket the test holds, through the driver's public
// `socket` option: a test can then give the driver a socket's events in the order a runtime does.
export function watchedClient(url: string, connectTimeoutSeconds = 3): WatchedClient {
  const { hostname, port } = new URL(url)
  let current: net.Socket | undefined
  const open = () =>
    new Promise<net.Socket>((resolve, reject) => {
      const socket = net.connect(Number(port || 5432), hostname)
      socket.once('connect', () => {
        current = socket
        resolve(socket)
      })
      socket.once('error', reject)
    })
  const sql = postgres(url, {
    max: 1,
    connect_timeout: connectTimeoutSeconds,
    onnotice: () => {},
    // postgres.js documents `socket` but its 3.4 types omit it: given by a spread, as
    // database/primary-host.ts gives it.
    ...{ socket: open },
  })
  return {
    sql,
    socket: () => {
      if (!current) throw new Error('no connection opened yet')
      return current
    },
  }
}

// What a statement came to within `ms`: 'resolved', its error's code, or 'pending'.
export function settles(promise: Promise<unknown>, ms: number): Promise<string> {
  return Promise.race([
    promise.then(
      () => 'resolved',
      (error: unknown) => (error as { code?: string }).code ?? String(error),
    ),
    Bun.sleep(ms).then(() => 'pending'),
  ])
}

// A reset as Bun reports one, under a statement in flight: the socket stops reading, the
// statement is sent, then the socket reports ECONNRESET (its 'close' is left to the test).
// Resolves with what the statement came to.
export async function resetUnderStatement(socket: net.Socket, send: () => Promise<unknown>): Promise<string> {
  socket.pause()
  const inFlight = settles(send(), 5000)
  await Bun.sleep(50)
  socket.emit('error', Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', syscall: 'read' }))
  return inFlight
}
