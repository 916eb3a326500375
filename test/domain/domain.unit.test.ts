import { describe, expect, test } from 'bun:test'
import { type CreatePlant, decide, evolve, initialState, type Plant } from '../../src/domain/plant.ts'

const now = new Date('2026-01-02T03:04:05Z')
const fern: Plant = { id: 7n, name: 'Fern', tag: 'green' }
const create = (plant: Plant): CreatePlant => ({ type: 'CreatePlant', owner: 'alice', plant, now })
const created = evolve(initialState, { type: 'PlantCreated', data: fern, recordedAt: now })

describe('decide', () => {
  test('given no plant, creating it emits PlantCreated stamped with the command time', () => {
    const decision = decide(create(fern), initialState)
    expect(decision).toEqual({
      outcome: 'created',
      plant: fern,
      events: [{ type: 'PlantCreated', data: fern, recordedAt: now }],
    })
  })

  test('given the same plant exists, repeating the creation is unchanged and emits nothing', () => {
    expect(decide(create({ ...fern }), created)).toEqual({ outcome: 'unchanged', plant: fern, events: [] })
  })

  test.each([
    ['another name', { ...fern, name: 'Palm' }],
    ['another tag', { ...fern, tag: 'blue' }],
    ['no tag', { ...fern, tag: null }],
    ['an empty tag', { ...fern, tag: '' }],
  ])('given the plant exists, creating it with %s is a conflict that emits nothing', (_label, changed) => {
    expect(decide(create(changed), created)).toEqual({
      outcome: 'conflict',
      plant: changed,
      existing: fern,
      events: [],
    })
  })
})

describe('evolve', () => {
  test('PlantCreated makes the plant exist with its data', () => {
    expect(created).toEqual({ status: 'created', plant: fern })
  })
})
