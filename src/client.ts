import { type Treaty, treaty } from '@elysiajs/eden'
import { changeEvents } from './changes/change-events.ts'
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
 * The client `createPlantStoreClient` returns: Eden Treaty's client of the whole API. Every route,
 * body, query and answer is typed from the schemas the server validates with.
 */
export type PlantStoreClient = Treaty.Create<App>

/**
 * A typed client of the Plant Store: of the service at a URL (such as `http://localhost:3000`), or
 * of an app in this process (the test store's `store.app`), called with no port. A call that no
 * longer fits the API fails the caller's type check. Ids are sent exactly, a `bigint` as its
 * digits; positions (`after`, the `Plant-Store-Position` header) are a `bigint` or the string the
 * service answered, never a number. `GET /plants/changes` answers an async iterable of
 * `PlantChangeEvent`s, whose ids stay strings; names and tags come back as strings, never as dates.
 */
export function createPlantStoreClient(
  service: string | App,
  { token, fetch }: PlantStoreClientOptions = {},
): PlantStoreClient {
  const headers = token === undefined ? {} : { authorization: `Bearer ${token}` }
  // Eden calls its fetcher as (url, init) only; its type, the runtime's `fetch`, has more members.
  const fetcher = fetch as typeof globalThis.fetch | undefined
  return exact(
    treaty<App>(service, { headers, parseDate: false, ...(fetcher === undefined ? {} : { fetcher }) }),
  )
}

const BODY_METHODS = new Set(['post', 'put', 'patch', 'delete'])
const QUERY_METHODS = new Set(['get', 'head'])

type CallOptions = { headers?: Record<string, unknown>; query?: Record<string, unknown> } | undefined
type TreatyAnswer = { data: unknown; response?: Response }

// Eden writes a JSON body with JSON.stringify, which refuses a bigint, and passes a GET's options
// through it too. This writes a body instead, a bigint as its exact digits, and hands Eden the
// text, which it sends as it is; a bigint in a query or a header becomes its digits. An answer that
// is a change stream is read by changeEvents, not by Eden. Eden's client is a proxy whose every
// property is a function (a path segment or a method), wrapped here alike.
function exact<Client extends object>(client: Client, method = ''): Client {
  return new Proxy(client, {
    get: (target, key) => {
      const value: unknown = Reflect.get(target, key)
      return typeof value === 'function' ? exact(value, String(key)) : value
    },
    apply: (target, self, args: unknown[]) => {
      const call = (sent: unknown[]) => {
        const result: unknown = Reflect.apply(target as () => unknown, self, sent)
        if (typeof result === 'function') return exact(result)
        return result instanceof Promise ? result.then(withChangeEvents) : result
      }
      if (QUERY_METHODS.has(method)) return call([withDigits(args[0] as CallOptions)])
      const [body, options] = args as [unknown, CallOptions]
      if (!BODY_METHODS.has(method)) return call(args)
      if (!isJsonValue(body)) return call([body, withDigits(options)])
      const sent = withDigits({
        ...options,
        headers: { ...options?.headers, 'content-type': 'application/json' },
      })
      return call([exactJson(body), sent])
    },
  })
}

function withChangeEvents(answer: TreatyAnswer): TreatyAnswer {
  const { response } = answer
  if (response?.status !== 200 || !response.headers.get('content-type')?.startsWith('text/event-stream'))
    return answer
  return { ...answer, data: changeEvents(response) }
}

// JSON with each bigint written as its digits, exactly: the runtime's JSON.stringify refuses one,
// and JSON.rawJSON, which could write it, is missing from Node 20.
function exactJson(body: object): string {
  const mark = `bigint-${crypto.randomUUID()}`
  const text = JSON.stringify(body, (_key, value: unknown) =>
    typeof value === 'bigint' ? `${mark}${value}${mark}` : value,
  )
  return text.replace(new RegExp(`"${mark}(-?\\d+)${mark}"`, 'g'), '$1')
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
