import { expect, test } from 'bun:test'
import { SETTINGS } from '../../src/config/settings.ts'
import { editDistance, findUnknownSettings } from '../../src/config/unknown-settings.ts'

const named = (env: Record<string, string>) =>
  findUnknownSettings(env).map(({ name, nearest }) => [name, nearest])

test('a name a letter or two from a known one, in any case, is named with the known one', () => {
  expect(
    named({
      DATABSE_URL: 'postgres://u@h/db',
      database_url: 'postgres://u@h/db',
      EVENT_NATS_URL: 'nats://n:4222',
      AUTH_JWT_SCRET: 'x',
      LOGLEVEL: 'debug',
      PROT: '3000',
      host: '127.0.0.1',
    }),
  ).toEqual([
    ['AUTH_JWT_SCRET', 'AUTH_JWT_SECRET'],
    ['DATABSE_URL', 'DATABASE_URL'],
    ['EVENT_NATS_URL', 'EVENTS_NATS_URL'],
    ['LOGLEVEL', 'LOG_LEVEL'],
    ['PROT', 'PORT'],
    ['database_url', 'DATABASE_URL'],
    ['host', 'HOST'],
  ])
})

test('a name with one of the service prefixes is named whatever its distance, with the nearest known one', () => {
  const [found] = findUnknownSettings({ EVENTS_NATS_TOKEN: 's3cret' })
  expect(found?.nearest).toBe('EVENTS_NATS_URL')
  expect(found?.message).toBe(
    'EVENTS_NATS_TOKEN is not a setting of this service and is ignored; the nearest known name is EVENTS_NATS_URL',
  )
  expect(named({ CORS_ORIGIN: 'https://a.example' })).toEqual([['CORS_ORIGIN', 'CORS_ORIGINS']])
  expect(named({ DATA_DIRECTORY: '/srv' })).toEqual([['DATA_DIRECTORY', 'DATA_DIR']])
  expect(named({ REQUEST_TIMEOUT: '5' })).toEqual([['REQUEST_TIMEOUT', 'REQUEST_TIMEOUT_MS']])
})

test("known names, and a machine's usual variables, are not warned about", () => {
  const env: Record<string, string> = Object.fromEntries(Object.keys(SETTINGS).map((name) => [name, 'x']))
  for (const usual of [
    'PATH',
    'HOME',
    'HOSTNAME',
    'PWD',
    'OLDPWD',
    'USER',
    'LOGNAME',
    'SHELL',
    'TERM',
    'LANG',
  ])
    env[usual] = 'x'
  for (const other of [
    'TMPDIR',
    'NODE_ENV',
    'CI',
    'TEST_POSTGRES_URL',
    'TEST_NATS_URL',
    'CHROMIUM_PATH',
    'PGHOST',
  ])
    env[other] = 'x'
  expect(findUnknownSettings(env)).toEqual([])
})

test('a family of standard variables in the table makes every name of it known', () => {
  const table = { ...SETTINGS, 'OTEL_*': { meaning: 'OpenTelemetry', part: 'server' as const } }
  expect(
    findUnknownSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SERVICE_NAME: 'x' }, table),
  ).toEqual([])
})

test('the distance counts a swap of two neighbours as one step', () => {
  expect(editDistance('DATABSAE_URL', 'DATABASE_URL')).toBe(1)
  expect(editDistance('DATABSE_URL', 'DATABASE_URL')).toBe(1)
  expect(editDistance('HOME', 'HOST')).toBe(2)
  expect(editDistance('', 'PORT')).toBe(4)
  expect(editDistance('PORT', 'PORT')).toBe(0)
})
