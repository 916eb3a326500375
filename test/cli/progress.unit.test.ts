import { expect, test } from 'bun:test'
import { formatProgress, formatSeconds, progressReporter } from '../../src/cli/progress.ts'

const REBUILD = { label: 'rebuild' }

test('plain progress lines carry the command, the count, the rate and the time left', () => {
  const line = formatProgress({ done: 250_000, total: 1_000_000, elapsedSeconds: 2 }, false, REBUILD)
  expect(line).toBe('rebuild: 250000/1000000 events, 125000 events/s, ETA 6s\n')
})

test('each command names itself and what it counts', () => {
  const line = formatProgress({ done: 3000, total: 4000, elapsedSeconds: 3 }, false, {
    label: 'keys rotate',
    unit: 'keys',
  })
  expect(line).toBe('keys rotate: 3000/4000 keys, 1000 keys/s, ETA 1s\n')
})

test('on a terminal the bar, after the command, redraws in place', () => {
  const line = formatProgress({ done: 500, total: 1000, elapsedSeconds: 100 }, true, { label: 'export' })
  expect(line).toBe(
    `\rexport [${'#'.repeat(15)}${'-'.repeat(15)}]  50% 500/1000 events, 5 events/s, ETA 1m40s\u001b[K`,
  )
})

test('an input of known size gives the fraction read and an estimate, beside the count', () => {
  const sample = { done: 40_000, fraction: 0.25, elapsedSeconds: 10 }
  expect(formatProgress(sample, false, { label: 'import' })).toBe(
    'import: 40000 events (25% of the input), 4000 events/s, ETA 30s\n',
  )
  expect(formatProgress(sample, true, { label: 'import' })).toStartWith(
    `\rimport [${'#'.repeat(8)}${'-'.repeat(22)}]  25% 40000 events (25% of the input)`,
  )
})

test('without a total or a size (a pipe), the count and the rate, without a bar or an estimate', () => {
  const sample = { done: 90_000, elapsedSeconds: 3 }
  expect(formatProgress(sample, false, { label: 'import' })).toBe('import: 90000 events, 30000 events/s\n')
  expect(formatProgress(sample, true, { label: 'import' })).toBe(
    '\rimport: 90000 events, 30000 events/s\u001b[K',
  )
})

test('an empty log is complete at once, without an estimate', () => {
  expect(formatProgress({ done: 0, total: 0, elapsedSeconds: 0 }, false, REBUILD)).toBe(
    'rebuild: 0/0 events, 0 events/s, ETA ?\n',
  )
})

test('times left read as seconds, minutes or hours', () => {
  expect([0.2, 59.5, 60, 3599, 3600, 4000.5, undefined].map(formatSeconds)).toEqual([
    '1s',
    '1m00s',
    '1m00s',
    '59m59s',
    '1h00m00s',
    '1h06m41s',
    '?',
  ])
})

function reporterAt(tty: boolean, intervalMs = 1000) {
  let now = 0
  const written: string[] = []
  const progress = progressReporter(
    { write: (text) => written.push(text), tty, clock: () => now },
    { label: 'export' },
    intervalMs,
  )
  return { progress, written, at: (ms: number) => (now = ms) }
}

test('reports are throttled to the interval, and none comes before the first interval has passed', () => {
  // given
  const { progress, written, at } = reporterAt(false)
  // when
  for (const ms of [0, 400, 999, 1000, 1500, 2100]) {
    at(ms)
    progress.report({ done: ms, total: 3000 })
  }
  // then
  expect(written).toEqual([
    'export: 1000/3000 events, 1000 events/s, ETA 2s\n',
    'export: 2100/3000 events, 1000 events/s, ETA 1s\n',
  ])
})

test('a command that ends within the interval writes nothing: no report, no step, no newline', () => {
  // given
  const { progress, written, at } = reporterAt(true)
  // when
  at(100)
  progress.report({ done: 10, total: 20 })
  progress.step('comparing')
  progress.finish()
  // then
  expect(written).toEqual([])
})

test('on a terminal a step ends the bar on its line first, and finish ends the last bar', () => {
  // given
  const { progress, written, at } = reporterAt(true)
  // when
  at(1000)
  progress.report({ done: 10, total: 20 })
  progress.step('comparing')
  at(2000)
  progress.report({ done: 20, total: 20 })
  progress.finish()
  // then
  expect(written.map((text) => text.replace(/\[[#-]+\].*/, '[bar]'))).toEqual([
    '\rexport [bar]',
    '\n',
    'export: comparing\n',
    '\rexport [bar]',
    '\n',
  ])
})

test('in a log, a step is a line of its own once the command has run for the interval', () => {
  const { progress, written, at } = reporterAt(false)
  at(1500)
  progress.step('appending')
  progress.finish()
  expect(written).toEqual(['export: appending\n'])
})
