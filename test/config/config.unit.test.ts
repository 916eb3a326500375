import { describe, expect, test } from 'bun:test'
import { loadConfig, requireTokenKeys } from '../../src/config/config.ts'
import { SETTINGS, type Setting } from '../../src/config/settings.ts'

const secret = 'a'.repeat(32)

describe('loadConfig', () => {
  test('with nothing set, serves the embedded store in ./data on 0.0.0.0:3000 with a local secret', () => {
    const config = loadConfig({})
    expect(config).toMatchObject({
      host: '0.0.0.0',
      port: 3000,
      storage: { kind: 'embedded', dataDir: './data' },
    })
    expect(config.auth.useLocalSecret).toBe(true)
    expect(config.changeStreamsPerOwner).toBe(100)
  })

  test('request lines name the subject only with LOG_SUBJECT=true', () => {
    expect(loadConfig({}).logSubject).toBe(false)
    expect(loadConfig({ LOG_SUBJECT: 'false' }).logSubject).toBe(false)
    expect(loadConfig({ LOG_SUBJECT: 'true' }).logSubject).toBe(true)
  })

  test('CHANGE_STREAMS_PER_OWNER caps the change streams of one owner', () => {
    expect(loadConfig({ CHANGE_STREAMS_PER_OWNER: '3' }).changeStreamsPerOwner).toBe(3)
  })

  test('DATABASE_URL selects PostgreSQL', () => {
    const config = loadConfig({ DATABASE_URL: 'postgres://u@h/db', AUTH_JWT_SECRET: secret })
    expect(config.storage).toMatchObject({ kind: 'postgres', url: 'postgres://u@h/db' })
    expect(config.auth.useLocalSecret).toBe(false)
  })

  test('DATA_DIR=memory: selects a store in memory, with a configured verifier', () => {
    const config = loadConfig({ DATA_DIR: 'memory:', AUTH_JWT_SECRET: secret })
    expect(config.storage).toEqual({ kind: 'memory' })
    expect(config.auth.useLocalSecret).toBe(false)
  })

  test('DATABASE_READ_URLS lists replicas of DATABASE_URL, with READ_WAIT_MS 500 by default', () => {
    const config = loadConfig({
      DATABASE_URL: 'postgres://u@primary/db',
      AUTH_JWT_SECRET: secret,
      DATABASE_READ_URLS: 'postgres://u@r1/db, postgresql://u:p@r2:5433/db',
    })
    expect(config.readReplicas).toEqual({
      urls: ['postgres://u@r1/db', 'postgresql://u:p@r2:5433/db'],
      waitMs: 500,
      maxLagMs: 10_000,
    })
    expect(
      loadConfig({ DATABASE_URL: 'postgres://u@h/db', AUTH_JWT_SECRET: secret }).readReplicas,
    ).toBeUndefined()
  })

  const onPostgres = { DATABASE_URL: 'postgres://u@h/db', AUTH_JWT_SECRET: secret }
  test.each([
    [{ ...onPostgres, DATABASE_READ_URLS: 'mysql://r/db' }, 'DATABASE_READ_URLS'],
    [{ ...onPostgres, DATABASE_READ_URLS: 'postgres://r/db,' }, 'DATABASE_READ_URLS'],
    [{ ...onPostgres, DATABASE_READ_URLS: 'r1:5432' }, 'DATABASE_READ_URLS'],
    [{ ...onPostgres, DATABASE_READ_URLS: 'postgres:///db' }, 'DATABASE_READ_URLS'],
    [{ ...onPostgres, DATABASE_READ_URLS: 'postgres://r1/db;postgres://r2/db' }, 'DATABASE_READ_URLS'],
    [{ ...onPostgres, DATABASE_READ_URLS: 'postgres://r1/db postgres://r2/db' }, 'DATABASE_READ_URLS'],
    [{ DATABASE_READ_URLS: 'postgres://r/db' }, 'DATABASE_READ_URLS'],
    [
      { DATA_DIR: 'memory:', AUTH_JWT_SECRET: secret, DATABASE_READ_URLS: 'postgres://r/db' },
      'DATABASE_READ_URLS',
    ],
    [{ ...onPostgres, DATABASE_READ_URLS: 'postgres://r/db', READ_WAIT_MS: '-1' }, 'READ_WAIT_MS'],
    [{ ...onPostgres, READ_WAIT_MS: 'soon' }, 'READ_WAIT_MS'],
    [{ ...onPostgres, READ_MAX_LAG_MS: '10' }, 'READ_MAX_LAG_MS'],
    [{ EVENTS_NATS_URL: 'nats://n:4222', EVENTS_NATS_REPLICAS: '0' }, 'EVENTS_NATS_REPLICAS'],
    [{ EVENTS_NATS_URL: 'nats://n:4222', EVENTS_NATS_REPLICAS: 'three' }, 'EVENTS_NATS_REPLICAS'],
  ])('a bad read or feed setting %p stops the start naming %s', (env, variable) => {
    expect(() => loadConfig(env)).toThrow(expect.objectContaining({ code: 'BAD_SETTING' }))
    expect(() => loadConfig(env)).toThrow(variable)
  })

  test.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ AUTH_JWT_SECRET: 'short' }, 'AUTH_JWT_SECRET'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ LOG_SUBJECT: 'yes' }, 'LOG_SUBJECT'],
    [{ CHANGE_STREAMS_PER_OWNER: '0' }, 'CHANGE_STREAMS_PER_OWNER'],
    [{ CHANGE_STREAMS_PER_OWNER: 'many' }, 'CHANGE_STREAMS_PER_OWNER'],
    [{ CHANGE_STREAMS_PER_OWNER: '1.5' }, 'CHANGE_STREAMS_PER_OWNER'],
    [{ AUTH_JWKS_URL: 'not a url' }, 'AUTH_JWKS_URL'],
    [{ CORS_ORIGINS: 'app.example.com' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'https://app.example.com/' }, 'did you mean "https://app.example.com"'],
    [{ CORS_ORIGINS: 'https://App.Example.com' }, 'did you mean "https://app.example.com"'],
    [{ CORS_ORIGINS: 'https://a.example:443' }, 'did you mean "https://a.example"'],
    [{ CORS_ORIGINS: 'https://a.example,*' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'https://a.example,' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'null' }, 'CORS_ORIGINS'],
    [{ CORS_ORIGINS: 'file:///tmp/page.html' }, 'CORS_ORIGINS'],
    [
      { DATABASE_URL: 'postgres://u@h/db', AUTH_JWT_SECRET: secret, DATABASE_POOL_SIZE: '0' },
      'DATABASE_POOL_SIZE',
    ],
  ])('a bad value %p stops the start naming %s', (env, variable) => {
    expect(() => loadConfig(env)).toThrow(expect.objectContaining({ code: 'BAD_SETTING' }))
    expect(() => loadConfig(env)).toThrow(variable)
  })

  test('CORS_ORIGINS: off by default; * for any; else exact origins, comma-separated', () => {
    expect(loadConfig({}).cors).toBeUndefined()
    expect(loadConfig({ CORS_ORIGINS: ' * ' }).cors).toEqual({ origins: '*' })
    expect(loadConfig({ CORS_ORIGINS: 'https://app.example.com, http://127.0.0.1:5173' }).cors).toEqual({
      origins: ['https://app.example.com', 'http://127.0.0.1:5173'],
    })
  })

  test('the defaults are the table of settings, and an unset variable takes its default', () => {
    const config = loadConfig({})
    expect(String(config.port)).toBe(SETTINGS.PORT.fallback)
    expect(config.host).toBe(SETTINGS.HOST.fallback)
    expect(config.dataDir).toBe(SETTINGS.DATA_DIR.fallback)
    expect(String(config.requestTimeoutMs)).toBe(SETTINGS.REQUEST_TIMEOUT_MS.fallback)
    expect(config.logLevel).toBe(SETTINGS.LOG_LEVEL.fallback)
    const feed = loadConfig({ EVENTS_NATS_URL: 'nats://n:4222' }).feed
    expect(feed?.stream).toBe(SETTINGS.EVENTS_NATS_STREAM.fallback)
    expect(String(feed?.replicas)).toBe(SETTINGS.EVENTS_NATS_REPLICAS.fallback)
  })

  test("every default passes its own row's rule", () => {
    const table: Record<string, Setting> = SETTINGS
    const refused = Object.entries(table).flatMap(([name, { fallback, rule }]) => {
      if (fallback === undefined) return []
      const read = rule(fallback, name)
      return 'refused' in read ? [`${name} ${read.refused}`] : []
    })
    expect(refused).toEqual([])
  })

  test('a setting is checked whatever reads it: a pool size on the embedded store, a stream name with the feed off', () => {
    expect(() => loadConfig({ DATABASE_POOL_SIZE: '-3' })).toThrow(
      'DATABASE_POOL_SIZE must be an integer from 1 to 1000, got "-3"',
    )
    expect(() => loadConfig({ EVENTS_NATS_STREAM: 'a.b' })).toThrow(
      'EVENTS_NATS_STREAM must be a stream name',
    )
    expect(() => loadConfig({ OTEL_EXPORTER_OTLP_COMPRESSION: 'zip' })).toThrow(
      'OTEL_EXPORTER_OTLP_COMPRESSION must be one of gzip, none, got "zip"',
    )
  })

  test("a secret's refusal never shows it", () => {
    for (const env of [{ AUTH_JWT_SECRET: 'hunter2' }, { KEY_ENCRYPTION_KEYS: 'hunter2' }])
      expect(() => loadConfig(env)).toThrow(
        expect.objectContaining({ message: expect.not.stringContaining('hunter2') }),
      )
  })

  // Only the server and `token issue` check or sign tokens: a command that moves or checks the
  // log reads DATABASE_URL without a secret.
  test('no token secret is needed to read the configuration; requireTokenKeys asks for one where none exists', () => {
    const onPostgres = loadConfig({ DATABASE_URL: 'postgres://u@h/db' })
    expect(onPostgres.storage.kind).toBe('postgres')
    expect(() => requireTokenKeys(onPostgres)).toThrow(expect.objectContaining({ code: 'BAD_SETTING' }))
    expect(() => requireTokenKeys(onPostgres)).toThrow('AUTH_JWT_SECRET')
    const inMemory = loadConfig({ DATA_DIR: 'memory:' })
    expect(() => requireTokenKeys(inMemory)).toThrow('AUTH_JWT_SECRET')
    for (const env of [
      {},
      { DATABASE_URL: 'postgres://u@h/db', AUTH_JWT_SECRET: secret },
      { DATABASE_URL: 'postgres://u@h/db', AUTH_JWKS_URL: 'https://idp.example/jwks.json' },
      { DATA_DIR: 'memory:', AUTH_JWT_SECRET: secret },
    ])
      expect(() => requireTokenKeys(loadConfig(env))).not.toThrow()
  })
})

describe('loadConfig, given several problems at once', () => {
  test('given bad values in several parts, then one failure names each, one line apiece', () => {
    // given
    const env = {
      PORT: 'abc',
      AUTH_JWT_SECRET: 'short',
      EVENTS_NATS_URL: 'localhost:4222',
      EVENTS_NATS_STREAM: 'a.b',
      OTEL_TRACES_SAMPLER: 'sometimes',
      DATABASE_URL: 'postgres://u@h/db',
      DATABASE_POOL_SIZE: '0',
    }
    // when
    const load = () => loadConfig(env)
    // then
    expect(load).toThrow(expect.objectContaining({ code: 'BAD_SETTING' }))
    const lines = String(
      (() => {
        try {
          load()
        } catch (error) {
          return (error as Error).message
        }
      })(),
    ).split('\n')
    const named = [
      'PORT',
      'AUTH_JWT_SECRET',
      'EVENTS_NATS_URL',
      'EVENTS_NATS_STREAM',
      'OTEL_TRACES_SAMPLER',
      'DATABASE_POOL_SIZE',
    ]
    expect(lines).toHaveLength(named.length)
    for (const variable of named) expect(lines.filter((line) => line.startsWith(variable))).toHaveLength(1)
  })

  test('given PostgreSQL with no token secret and no key-encryption key, when the server asks for both, then both are named at once', () => {
    // when
    const load = () =>
      loadConfig({ DATABASE_URL: 'postgres://u@h/db' }, ['token keys', 'key-encryption keys'])
    // then
    expect(load).toThrow(/AUTH_JWT_SECRET.*\n.*KEY_ENCRYPTION_KEYS is not/)
    expect(() => loadConfig({ DATABASE_URL: 'postgres://u@h/db' })).not.toThrow()
  })
})
