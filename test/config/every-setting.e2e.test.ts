import { afterAll, beforeAll, expect, test } from 'bun:test'
import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { SETTINGS } from '../../src/config/settings.ts'
import { makeDataDir } from '../support/data-dir.ts'
import { runServerToExit } from '../support/server-process.ts'

// Every row of the table of settings (src/config/settings.ts), given a value that breaks its type
// or range, alone: the start stops in one line naming that variable, and exits 2. The start has
// nothing else to stop on first but a DATA_DIR that is a file, which stops it with exit 1 once the
// settings have passed: an unchecked setting shows as that exit 1.
const BAD: Record<string, [string, string]> = {
  HOST: ['HOST', 'local host'],
  PORT: ['PORT', '65536'],
  DATABASE_URL: ['DATABASE_URL', 'mysql://u@h/db'],
  DATA_DIR: ['DATA_DIR', 'file:///srv/plants'],
  DATABASE_POOL_SIZE: ['DATABASE_POOL_SIZE', '-3'],
  DATABASE_STATEMENT_TIMEOUT_MS: ['DATABASE_STATEMENT_TIMEOUT_MS', '10s'],
  PGTARGETSESSIONATTRS: ['PGTARGETSESSIONATTRS', 'master'],
  KEY_ENCRYPTION_KEYS: ['KEY_ENCRYPTION_KEYS', 'not-a-key'],
  KEY_ENCRYPTION_KEYS_FILE: ['KEY_ENCRYPTION_KEYS_FILE', '/nonexistent/plant-store.kek'],
  AUTH_JWT_SECRET: ['AUTH_JWT_SECRET', 'short'],
  AUTH_JWKS_URL: ['AUTH_JWKS_URL', 'not a url'],
  AUTH_ISSUER: ['AUTH_ISSUER', 'https://login.example.com/\nsecond line'],
  AUTH_AUDIENCE: ['AUTH_AUDIENCE', 'plant\tstore'],
  AUTH_JWKS_CACHE_MAX_AGE_MS: ['AUTH_JWKS_CACHE_MAX_AGE_MS', '10m'],
  AUTH_JWKS_COOLDOWN_MS: ['AUTH_JWKS_COOLDOWN_MS', '-1'],
  REQUEST_TIMEOUT_MS: ['REQUEST_TIMEOUT_MS', 'soon'],
  CHANGE_STREAMS_PER_OWNER: ['CHANGE_STREAMS_PER_OWNER', '0'],
  CORS_ORIGINS: ['CORS_ORIGINS', 'app.example.com'],
  LOG_LEVEL: ['LOG_LEVEL', 'loud'],
  LOG_FORMAT: ['LOG_FORMAT', 'xml'],
  LOG_SUBJECT: ['LOG_SUBJECT', 'yes'],
  EVENTS_NATS_URL: ['EVENTS_NATS_URL', 'localhost:4222'],
  EVENTS_NATS_STREAM: ['EVENTS_NATS_STREAM', 'a.b'],
  EVENTS_NATS_SUBJECT_PREFIX: ['EVENTS_NATS_SUBJECT_PREFIX', 'plant store'],
  EVENTS_SOURCE: ['EVENTS_SOURCE', 'plant\u0007store'],
  EVENTS_NATS_REPLICAS: ['EVENTS_NATS_REPLICAS', '7'],
  DATABASE_READ_URLS: ['DATABASE_READ_URLS', 'mysql://r/db'],
  READ_WAIT_MS: ['READ_WAIT_MS', '-1'],
  READ_MAX_LAG_MS: ['READ_MAX_LAG_MS', '10'],
  OTEL_EXPORTER_OTLP_ENDPOINT: ['OTEL_EXPORTER_OTLP_ENDPOINT', 'collector:4318'],
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: ['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', 'grpc://c:4317'],
  'OTEL_EXPORTER_OTLP_*': ['OTEL_EXPORTER_OTLP_TIMEOUT', 'soon'],
  OTEL_SERVICE_NAME: ['OTEL_SERVICE_NAME', 'plant\u001bstore'],
  OTEL_RESOURCE_ATTRIBUTES: ['OTEL_RESOURCE_ATTRIBUTES', 'novalue'],
  OTEL_TRACES_SAMPLER: ['OTEL_TRACES_SAMPLER', 'sometimes'],
  OTEL_TRACES_SAMPLER_ARG: ['OTEL_TRACES_SAMPLER_ARG', '1.5'],
  OTEL_SDK_DISABLED: ['OTEL_SDK_DISABLED', 'yes'],
}

// A secret, so that a bad DATABASE_URL alone is the one thing wrong with a start on PostgreSQL.
const SECRET = 'a-token-secret-of-at-least-32-bytes'
let folder: string
let BASE: Record<string, string>
beforeAll(async () => {
  folder = await makeDataDir('plant-store-every-setting-')
  const notAFolder = join(folder, 'a-file')
  await writeFile(notAFolder, '')
  BASE = { DATA_DIR: notAFolder, AUTH_JWT_SECRET: SECRET }
})
afterAll(() => rm(folder, { recursive: true, force: true }))

test('the walk below has a bad value for every row of the table', () => {
  expect(Object.keys(BAD).sort()).toEqual(Object.keys(SETTINGS).sort())
})

test('given each setting alone with a bad value, then the start stops in one line naming it, exit 2', async () => {
  // given the rows, each with its bad value
  const rows = Object.values(BAD)
  // when the server starts with each (four at a time)
  const outcomes: Record<string, { exitCode: number; said: string }> = {}
  for (let at = 0; at < rows.length; at += 4) {
    await Promise.all(
      rows.slice(at, at + 4).map(async ([name, value]) => {
        const { exitCode, stderr } = await runServerToExit({ ...BASE, [name]: value })
        const oneLine = new RegExp(`^plant store cannot start: ${name} [^\\n]*\\n$`).test(stderr)
        outcomes[name] = { exitCode, said: oneLine ? 'one line naming it' : stderr }
      }),
    )
  }
  // then each stopped with one line naming it, and exit 2
  const expected = Object.fromEntries(
    rows.map(([name]) => [name, { exitCode: 2, said: 'one line naming it' }]),
  )
  expect(outcomes).toEqual(expected)
}, 300_000)
