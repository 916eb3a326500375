import { treaty } from '@elysiajs/eden'
import type { App } from './start/app.ts'

/** The whole API's type, for Eden Treaty: `treaty<App>(url)` is a client checked against it. */
export type { App }

/** What a client needs besides the service. */
export type PlantStoreClientOptions = {
  /** A JWT whose `sub` is the caller; sent as `Authorization: Bearer <token>` on every request. */
  token?: string
  /** What sends each request (a URL and its init) to a service at a URL; the global `fetch` when left out. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>
}

/**
 * A typed client of the Plant Store: of the service at a URL (such as `http://localhost:3000`), or
 * of an app in this process (the test store's `store.app`), called with no port. Every route,
 * body, query and answer is typed from the schemas the server validates with, so a call that no
 * longer fits the API fails the caller's type check. Ids are sent exactly, a `bigint` as its
 * digits; names and tags come back as strings, never as dates.
 */
export function createPlantStoreClient(
  service: string | App,
  { token, fetch }: PlantStoreClientOptions = {},
) {
  const headers = token === undefined ? {} : { authorization: `Bearer ${token}` }
  // Eden calls its fetcher as (url, init) only; its type, the runtime's `fetch`, has more members.
  const fetcher = fetch as typeof globalThis.fetch | undefined
  return exactBodies(
    treaty<App>(service, { headers, parseDate: false, ...(fetcher === undefined ? {} : { fetcher }) }),
  )
}

/** The client `createPlantStoreClient` returns. */
export type PlantStoreClient = ReturnType<typeof createPlantStoreClient>

const BODY_METHODS = new Set(['post', 'put', 'patch', 'delete'])
const QUERY_METHODS = new Set(['get', 'head'])
// Standard in Bun, Deno and Node 21+, not yet in TypeScript's lib.
const rawJson = (JSON as unknown as { rawJSON: (text: string) => unknown }).rawJSON

type CallOptions = { headers?: Record<string, unknown>; query?: Record<string, unknown> } | undefined

// Eden writes a JSON body with JSON.stringify, which refuses a bigint, and passes a GET's options
// through it too. This writes a body instead, a bigint as its exact digits, and hands Eden the
// text, which it sends as it is; a bigint in a query or a header becomes its digits, as a number
// does. Eden's client is a proxy whose every property is a function (a path segment or a
// method), wrapped here alike.
function exactBodies<Client extends object>(client: Client, method = ''): Client {
  return new Proxy(client, {
    get: (target, key) => {
      const value: unknown = Reflect.get(target, key)
      return typeof value === 'function' ? exactBodies(value, String(key)) : value
    },
    apply: (target, self, args: unknown[]) => {
      const call = (sent: unknown[]) => {
        const result: unknown = Reflect.apply(target as () => unknown, self, sent)
        return typeof result === 'function' ? exactBodies(result) : result
      }
      if (QUERY_METHODS.has(method)) return call([withDigits(args[0] as CallOptions)])
      const [body, options] = args as [unknown, CallOptions]
      if (!BODY_METHODS.has(method)) return call(args)
      if (!isJsonValue(body)) return call([body, withDigits(options)])
      const text = JSON.stringify(body, (_key, value: unknown) =>
        typeof value === 'bigint' ? rawJson(value.toString()) : value,
      )
      const sent = withDigits({
        ...options,
        headers: { ...options?.headers, 'content-type': 'application/json' },
      })
      return call([text, sent])
    },
  })
}

function withDigits(options: CallOptions): CallOptions {
  if (options === undefined || !isJsonValue(options)) return options
  const digits = (values: Record<string, unknown> | undefined) =>
    values === undefined
      ? undefined
      : Object.fromEntries(
          Object.entries(values).map(([name, value]) => [
            name,
            typeof value === 'bigint' ? value.toString() : value,
          ]),
        )
  return {
    ...options,
    ...(options.query === undefined ? {} : { query: digits(options.query) }),
    ...(options.headers === undefined ? {} : { headers: digits(options.headers) }),
  }
}

function isJsonValue(body: unknown): body is object {
  if (typeof body !== 'object' || body === null) return false
  return Array.isArray(body) || Object.getPrototypeOf(body) === Object.prototype
}
