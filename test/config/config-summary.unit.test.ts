import { expect, test } from 'bun:test'
import { loadConfig } from '../../src/config/config.ts'
import { summarizeConfig } from '../../src/config/summary.ts'

test('on PostgreSQL the start names the hosts and the database, never the user, password or query', () => {
  const summary = summarizeConfig(
    loadConfig({
      DATABASE_URL: 'postgres://app:s3cr%40t@db-host:5432/plants?sslmode=require&password=other',
    }),
  )
  expect(summary.fields).toEqual({ storage: 'postgres', database: 'db-host:5432/plants', feed: 'off' })
  expect(summary.text).toBe('PostgreSQL db-host:5432/plants, feed off')
  const several = summarizeConfig(
    loadConfig({
      DATABASE_URL: 'postgresql://app:pw@pg-1:5432,pg-2:5432/plants?target_session_attrs=read-write',
    }),
  )
  expect(several.fields.database).toBe('pg-1:5432,pg-2:5432/plants')
  for (const text of [JSON.stringify(summary), JSON.stringify(several)]) {
    expect(text).not.toContain('s3cr')
    expect(text).not.toContain('pw')
    expect(text).not.toContain('app')
    expect(text).not.toContain('other')
  }
})

test('the embedded store is named with its DATA_DIR, memory as memory, and the feed with its stream', () => {
  expect(summarizeConfig(loadConfig({ DATA_DIR: '/srv/plants' })).text).toBe(
    'the embedded store in DATA_DIR /srv/plants, feed off',
  )
  expect(summarizeConfig(loadConfig({ DATA_DIR: 'memory:' })).fields).toEqual({
    storage: 'memory',
    feed: 'off',
  })
  const fed = summarizeConfig(loadConfig({ EVENTS_NATS_URL: 'nats://a:4222,nats://b:4222' }))
  expect(fed.fields.feed).toBe('on: stream PLANT_STORE at nats://a:4222,nats://b:4222')
})
