import postgres from 'postgres'

// A postgres.js client for a URL, a Unix socket's included. libpq names a socket by its directory
// in the `host` query parameter (`postgres://user@localhost/db?host=/run/postgresql`), which is how the
// embedded server is reached (store/embedded/); postgres.js takes that directory as its `host`
// option but reads no socket from a URL (it would send `host` to the server as a setting).
export function postgresClient(
  url: string,
  options: postgres.Options<Record<string, postgres.PostgresType>>,
) {
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
