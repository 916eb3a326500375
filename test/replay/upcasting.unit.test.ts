import { expect, test } from 'bun:test'
import { decodePlantEvent } from '../../src/plants/plant-events.ts'
import { parseEventData } from '../../src/store/event-data.ts'
import type { RecordedEvent } from '../../src/store/event-store.ts'

const recorded = (schemaVersion: number, dataText: string): RecordedEvent => ({
  position: 1n,
  streamId: 's',
  streamVersion: 1,
  type: 'PlantCreated',
  schemaVersion,
  data: parseEventData(dataText),
  metadata: { owner: 'o', requestId: 'r' },
  recordedAt: new Date(0),
})

test('a v0 PlantCreated (plantId as a JSON number, title, no tag) decodes to the current shape exactly', () => {
  const event = decodePlantEvent(recorded(0, '{"plantId": 9007199254740993, "title": "Old fern"}'))
  expect(event.data).toEqual({ id: 9007199254740993n, name: 'Old fern', tag: null })
})

test('a v0 empty tag stays empty, and small ids decode too', () => {
  const event = decodePlantEvent(recorded(0, '{"plantId": -7, "title": "x", "tag": ""}'))
  expect(event.data).toEqual({ id: -7n, name: 'x', tag: '' })
})

test('a version newer than the code knows, or a malformed shape, is refused with its position', () => {
  expect(() => decodePlantEvent(recorded(2, '{"id": "1", "name": "x", "tag": null}'))).toThrow(
    'v2 at position 1',
  )
  expect(() => decodePlantEvent(recorded(0, '{"plantId": 1.5, "title": "x"}'))).toThrow('malformed')
})
