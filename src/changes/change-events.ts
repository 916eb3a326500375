import type { Static } from '@sinclair/typebox'
import type { ChangeEvent } from './change-routes.ts'

// A `GET /plants/changes` answer read as the typed client hands it on (client.ts): each
// `PlantCreated` event as { id, event, data }, its id (the event's position) and the plant's id
// kept as the decimal strings they are. Eden's own reader makes a number of every id that looks
// like one, which loses digits past 2^53, and a Date of every name that looks like one. Comment
// lines (keep-alives) and events of other types are passed by. Ends with the stream; stopping the
// iteration (`break`) cancels it.
export async function* changeEvents(
  response: Response,
): AsyncGenerator<Static<typeof ChangeEvent>, void, unknown> {
  const reader = response.body?.pipeThrough(new TextDecoderStream()).getReader()
  if (reader === undefined) return
  let buffered = ''
  try {
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      buffered += read.value.replaceAll('\r\n', '\n')
      for (let end = buffered.indexOf('\n\n'); end !== -1; end = buffered.indexOf('\n\n')) {
        const event = plantChange(buffered.slice(0, end))
        buffered = buffered.slice(end + 2)
        if (event !== undefined) yield event
      }
    }
  } finally {
    await reader.cancel().catch(() => {})
  }
}

function plantChange(block: string): Static<typeof ChangeEvent> | undefined {
  const fields = new Map<string, string>()
  for (const line of block.split('\n')) {
    const colon = line.indexOf(':')
    if (colon > 0) fields.set(line.slice(0, colon), line.slice(colon + 1).replace(/^ /, ''))
  }
  const [id, event, data] = [fields.get('id'), fields.get('event'), fields.get('data')]
  if (event !== 'PlantCreated' || id === undefined || data === undefined) return undefined
  return { id, event, data: JSON.parse(data) as Static<typeof ChangeEvent>['data'] }
}
