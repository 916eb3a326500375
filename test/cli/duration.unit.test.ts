import { expect, test } from 'bun:test'
import { parseDuration } from '../../src/cli/duration.ts'

test('given a count and a unit, then the seconds they name', () => {
  expect(['90s', '15m', '24h', '7d'].map(parseDuration)).toEqual([90, 900, 86400, 604800])
})

test('given no unit, a zero, a sign or an unknown unit, then no duration', () => {
  expect(['90', '0s', '-5m', '1w', '1.5h', ''].map(parseDuration)).toEqual(Array(6).fill(undefined))
})
