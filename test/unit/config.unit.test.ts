import { describe, expect, test } from 'bun:test'
import { ConfigError, loadConfig } from '../../src/config.ts'

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

  test.each([
    [{ PORT: 'eighty' }, 'PORT'],
    [{ PORT: '70000' }, 'PORT'],
    [{ AUTH_JWT_SECRET: 'short' }, 'AUTH_JWT_SECRET'],
    [{ DATABASE_URL: 'mysql://x' }, 'DATABASE_URL'],
    [{ DATABASE_URL: 'postgres://u@h/db' }, 'AUTH_JWT_SECRET'],
    [{ DATA_DIR: 'memory:' }, 'AUTH_JWT_SECRET'],
    [{ LOG_LEVEL: 'loud' }, 'LOG_LEVEL'],
    [{ AUTH_JWKS_URL: 'not a url' }, 'AUTH_JWKS_URL'],
    [
      { DATABASE_URL: 'postgres://u@h/db', AUTH_JWT_SECRET: secret, DATABASE_POOL_SIZE: '0' },
      'DATABASE_POOL_SIZE',
    ],
  ])('a bad value %p stops the start naming %s', (env, variable) => {
    expect(() => loadConfig(env)).toThrow(ConfigError)
    expect(() => loadConfig(env)).toThrow(variable)
  })
})
