import { describe, expect, test } from 'bun:test'
import { lagMs } from '../../src/replicas/replica-health.ts'

describe('lagMs', () => {
  const samples = [
    { at: 1000, lsn: 100n },
    { at: 2000, lsn: 200n },
    { at: 3000, lsn: 300n },
  ]

  test('a replica that has what the primary had at the latest sample is not behind', () => {
    expect(lagMs(samples, 300n, 3500)).toBe(0)
    expect(lagMs([], 0n, 3500)).toBe(0)
  })

  test('otherwise, the time since the primary was first seen past what it replayed', () => {
    expect(lagMs(samples, 250n, 3500)).toBe(500)
    expect(lagMs(samples, 150n, 3500)).toBe(1500)
    expect(lagMs(samples, 50n, 3500)).toBe(2500)
  })
})
