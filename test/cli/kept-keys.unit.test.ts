import { expect, test } from 'bun:test'
import { keysNeededLine } from '../../src/cli/kept-keys.ts'
import { loadConfig } from '../../src/config/config.ts'
import { TEST_KEY_ENCRYPTION_KEYS } from '../support/test-keys.ts'

// What `events export` says a restore of its file needs, by where the store keeps its KEKs.

test('given the embedded default, then the line names the KEK, the file in DATA_DIR it is kept in, and to copy it out', () => {
  // when
  const line = keysNeededLine(['1a2b3c4d'], loadConfig({ DATA_DIR: '/srv/plants' }))
  // then
  expect(line).toBe(
    'its restore needs key-encryption key 1a2b3c4d, kept in /srv/plants/key-encryption-keys: keep a copy outside DATA_DIR, apart from the exports (docs/operating.md, Backups)',
  )
})

test("given the operator's keys, then the line names each KEK and the setting that holds them", () => {
  // given
  const config = loadConfig({
    DATABASE_URL: 'postgres://u@h/db',
    KEY_ENCRYPTION_KEYS: TEST_KEY_ENCRYPTION_KEYS,
  })
  // when
  const line = keysNeededLine(['1a2b3c4d', '5e6f7a8b'], config)
  // then
  expect(line).toStartWith(
    'its restore needs key-encryption keys 1a2b3c4d, 5e6f7a8b, kept in KEY_ENCRYPTION_KEYS',
  )
  expect(line).toContain('keep it apart from the exports')
})

test('given an export without keys, then the line says it needs none', () => {
  expect(keysNeededLine([], loadConfig({}))).toBe(
    'the file holds no owner key: its restore needs no key-encryption key',
  )
})
