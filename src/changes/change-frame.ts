import { decodePlantEvent, type Plant } from '../plants/domain.ts'
import type { LoggedEvent } from '../store/event-log.ts'

// A created plant as the change stream sends it (CONTRACT §9), shaped like the feed's `data`.
export type PlantChange = Plant & { position: bigint }

// One server-sent event: the id is the event's position, the data one line of JSON (JSON.stringify
// escapes CR and LF, the only line breaks of the format). Ids are decimal strings so that no
// JSON reader rounds them.
export function changeFrame({ position, id, name, tag }: PlantChange): string {
  const data = tag === null ? { id: id.toString(), name } : { id: id.toString(), name, tag }
  return `id: ${position}\nevent: PlantCreated\ndata: ${JSON.stringify(data)}\n\n`
}

// A comment line: clients ignore it, connections and proxies see traffic.
export function commentFrame(text: string): string {
  return `: ${text}\n\n`
}

export function changeOf(event: LoggedEvent): PlantChange {
  const { data } = decodePlantEvent(event)
  return { position: event.position, ...data }
}
