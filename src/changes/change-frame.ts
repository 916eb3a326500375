import { decodePlantEvent, type Plant } from '../domain/plant.ts'
import type { LoggedEvent } from '../event-log/reading.ts'

// A created plant as the change stream sends it (docs/live-changes.md), shaped like the feed's `data`.
export type PlantChange = Plant & { position: bigint }

// One event as it goes out: its text encoded once, however many streams it goes to.
export type Frame = { position: bigint; bytes: Uint8Array }

const encoder = new TextEncoder()

// One server-sent event: the id is the event's position, the data one line of JSON (JSON.stringify
// escapes CR and LF, the only line breaks of the format). Ids are decimal strings so that no
// JSON reader rounds them.
export function changeFrame({ position, id, name, tag }: PlantChange): string {
  const data = tag === null ? { id: id.toString(), name } : { id: id.toString(), name, tag }
  return `id: ${position}\nevent: PlantCreated\ndata: ${JSON.stringify(data)}\n\n`
}

// The same, encoded once for every stream it goes to.
export function encodedChangeFrame(change: PlantChange): Frame {
  return { position: change.position, bytes: encoder.encode(changeFrame(change)) }
}

// A comment line: clients ignore it, connections and proxies see traffic.
export function commentFrame(text: string): string {
  return `: ${text}\n\n`
}

export function changeOf(event: LoggedEvent): PlantChange {
  const { data } = decodePlantEvent(event)
  return { position: event.position, ...data }
}
