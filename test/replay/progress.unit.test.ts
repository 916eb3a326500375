import { expect, test } from 'bun:test'
import { formatProgress, progressReporter } from '../../src/replay/progress.ts'

test('plain progress lines carry the count, the rate and the time left', () => {
  const line = formatProgress({ events: 250_000, total: 1_000_000, elapsedSeconds: 2 }, false)
  expect(line).toBe('rebuild: 250000/1000000 events, 125000 events/s, ETA 6s\n')
})

test('on a terminal the bar redraws in place', () => {
  const line = formatProgress({ events: 500, total: 1000, elapsedSeconds: 100 }, true)
  expect(line).toStartWith(
    `\r[${'#'.repeat(15)}${'-'.repeat(15)}]  50% 500/1000 events, 5 events/s, ETA 1m40s`,
  )
})

test('an empty log is complete at once, without an estimate', () => {
  expect(formatProgress({ events: 0, total: 0, elapsedSeconds: 0 }, false)).toBe(
    'rebuild: 0/0 events, 0 events/s, ETA ?\n',
  )
})

test('reports are throttled to the interval', () => {
  // given
  let now = 0
  const lines: string[] = []
  const progress = progressReporter({ write: (text) => lines.push(text), tty: false, clock: () => now }, 1000)
  // when
  for (const at of [0, 400, 999, 1000, 1500, 2100]) {
    now = at
    progress.report({ events: at, total: 3000 })
  }
  // then
  expect(lines.length).toBe(3)
})
