// A server-sent events reader for tests, parsing as the HTML Living Standard says (fields split at
import { tokenHeader } from './plant-client.ts'
// the first colon, one optional space dropped, an event dispatched at a blank line, comments kept
// apart so tests can see them).

export type SseEvent = { id?: string; event?: string; data: string }

export type SseReader = {
  response: Response
  // The next `count` events, waiting at most `timeoutMs` for them.
  take: (count: number, timeoutMs?: number) => Promise<SseEvent[]>
  // Events and comments that arrive within `ms`.
  collectFor: (ms: number) => Promise<SseEvent[]>
  comments: string[]
  // Resolves when the server ends the stream.
  ended: () => Promise<void>
  close: () => Promise<void>
}

type Fetch = (request: Request) => Promise<Response>

export async function openSse(request: Request, send: Fetch = fetch): Promise<SseReader> {
  const response = await send(request)
  const comments: string[] = []
  const events: SseEvent[] = []
  let waiting: (() => void) | undefined
  let done = false
  const body = response.body
  const reader = body?.getReader()
  const decoder = new TextDecoder()
  const pump = (async () => {
    if (!reader || response.status !== 200) return
    let buffered = ''
    let current: SseEvent = { data: '' }
    let hasData = false
    try {
      for (;;) {
        const { done: finished, value } = await reader.read()
        if (finished) break
        buffered += decoder.decode(value, { stream: true })
        let newline = buffered.search(/\r\n|\r|\n/)
        while (newline >= 0) {
          const line = buffered.slice(0, newline)
          buffered = buffered.slice(newline + (buffered.startsWith('\r\n', newline) ? 2 : 1))
          if (line === '') {
            if (hasData) events.push({ ...current, data: current.data.replace(/\n$/, '') })
            current = { data: '' }
            hasData = false
          } else if (line.startsWith(':')) {
            comments.push(line.slice(1).trim())
          } else {
            const colon = line.indexOf(':')
            const field = colon < 0 ? line : line.slice(0, colon)
            const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
            if (field === 'data') {
              current.data += `${value}\n`
              hasData = true
            } else if (field === 'id') current.id = value
            else if (field === 'event') current.event = value
          }
          newline = buffered.search(/\r\n|\r|\n/)
        }
        waiting?.()
      }
    } catch {
      // The connection was reset or cancelled: the stream is over.
    } finally {
      done = true
      waiting?.()
    }
  })()
  const changed = (ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms)
      waiting = () => {
        clearTimeout(timer)
        resolve()
      }
    })
  let taken = 0
  return {
    response,
    comments,
    take: async (count, timeoutMs = 10_000) => {
      const deadline = Date.now() + timeoutMs
      while (events.length - taken < count && !done && Date.now() < deadline) {
        await changed(deadline - Date.now())
      }
      const found = events.slice(taken, taken + count)
      taken += found.length
      return found
    },
    collectFor: async (ms) => {
      const deadline = Date.now() + ms
      while (!done && Date.now() < deadline) await changed(deadline - Date.now())
      const found = events.slice(taken)
      taken = events.length
      return found
    },
    ended: () => pump,
    close: async () => {
      await reader?.cancel().catch(() => {})
      await pump
    },
  }
}

export function changesRequest(
  baseUrl: string,
  token: string | undefined,
  { after, lastEventId }: { after?: string; lastEventId?: string } = {},
): Request {
  const headers: Record<string, string> = token === undefined ? {} : tokenHeader(token)
  if (lastEventId !== undefined) headers['last-event-id'] = lastEventId
  const query = after === undefined ? '' : `?after=${encodeURIComponent(after)}`
  return new Request(`${baseUrl}/plants/changes${query}`, { headers })
}

// The plant of an event's data, parsed as the API shapes it.
export function plantOf(event: SseEvent): { id: string; name: string; tag?: string } {
  return JSON.parse(event.data) as { id: string; name: string; tag?: string }
}
