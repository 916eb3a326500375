import { expect, test } from 'bun:test'
import type { PlantEvent } from '../../src/domain/plant.ts'
import { decodePlantEvent, encodePlantEvent } from '../../src/domain/plant.ts'

const read = (type: string, data: unknown) => ({
  position: 5n,
  type,
  schemaVersion: 1,
  data,
  metadata: { owner: 'o' },
  recordedAt: new Date(0),
})

test('an event decodes from its current shape as it was encoded, the id exact', () => {
  const event: PlantEvent = {
    type: 'PlantCreated',
    data: { id: 9223372036854775807n, name: '\uFEFFfern', tag: '' },
    recordedAt: new Date(0),
  }
  // The data goes through JSON text, as it does on its way to the log and back.
  const stored = JSON.parse(JSON.stringify(encodePlantEvent(event).data))
  expect(decodePlantEvent(read('PlantCreated', stored))).toEqual(event)
})

test('data that is not the current shape, or a type the domain lacks, is refused naming the event', () => {
  expect(() => decodePlantEvent(read('PlantCreated', { id: '1.5', name: 'x', tag: null }))).toThrow(
    'malformed event PlantCreated v1 at position 5',
  )
  expect(() => decodePlantEvent(read('PlantWatered', {}))).toThrow('unknown event PlantWatered')
})
