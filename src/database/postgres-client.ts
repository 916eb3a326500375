import postgres from 'postgres'
import { cancelAfter } from './cancel-after.ts'

type Options = postgres.Options<Record<string, postgres.PostgresType>>

// A postgres.js client for a URL, a Unix socket's included. libpq names a socket by its directory
// in the `host` query parameter (`postgres://user@localhost/db?host=/run/postgresql`), which is how the
// embedded server is reached (src/embedded/); postgres.js takes that directory as its `host`
// option but reads no socket from a URL (it would send `host` to the server as a setting).
export function postgresClient(url: string, options: Options) {
  if (isUnprepared(url)) return pooledClient(url, options)
  return socketClient(url, options)
}

function socketClient(url: string, options: Options) {
  const queryStart = url.indexOf('?')
  if (queryStart === -1) return postgres(url, options)
  const params = new URLSearchParams(url.slice(queryStart + 1))
  const socketDirectory = params.get('host')
  if (socketDirectory === null || !socketDirectory.startsWith('/')) return postgres(url, options)
  params.delete('host')
  const rest = params.size > 0 ? `?${params}` : ''
  return postgres(`${url.slice(0, queryStart)}${rest}`, { ...options, host: socketDirectory })
}

// The URL of a server's Unix socket in `directory`, as postgresClient reads it (the host before
// the path only makes it a URL that parses: the parameter wins, as in libpq).
export function socketUrl(directory: string, user: string, database: string): string {
  return `postgres://${encodeURIComponent(user)}@localhost/${encodeURIComponent(database)}?host=${encodeURIComponent(directory)}`
}

// `prepare=false` (or `disable`, as postgres.js reads it) is how a pooler in transaction mode is
// reached (docs/operating.md, Pooling).
export function isUnprepared(url: string): boolean {
  const queryStart = url.indexOf('?')
  if (queryStart === -1) return false
  const prepare = new URLSearchParams(url.slice(queryStart + 1)).get('prepare')
  return prepare === 'false' || prepare === 'disable'
}

// Behind a pooler nothing goes at connection but what every pooler takes (the application's
// name). The statement timeout is kept by the client's cancel instead, which measured cheaper
// than a `set local` in each transaction and, unlike it, covers statements outside one
// (docs/performance.md, Behind a pooler). plan_cache_mode is dropped: an unnamed statement is
// planned at each execution whatever it says.
function pooledClient(url: string, options: Options) {
  const { statement_timeout: timeout, plan_cache_mode: _, ...connection } = options.connection ?? {}
  const client = socketClient(url, { ...options, connection })
  const ms = Number(timeout ?? 0)
  return ms > 0 ? cancelAfter(client, ms) : client
}
