import { describe, expect, test } from 'bun:test'
import { loadConfig } from '../../src/config/config.ts'

describe('the feed configuration', () => {
  test('unset EVENTS_NATS_URL: no feed', () => {
    expect(loadConfig({}).feed).toBeUndefined()
  })

  test('EVENTS_NATS_URL turns it on, with the documented defaults', () => {
    expect(loadConfig({ EVENTS_NATS_URL: 'nats://127.0.0.1:4222, tls://nats.example:4443' }).feed).toEqual({
      servers: ['nats://127.0.0.1:4222', 'tls://nats.example:4443'],
      stream: 'PLANT_STORE',
      subjectPrefix: 'plant-store',
      source: 'plant-store',
      replicas: 1,
    })
  })

  test('EVENTS_NATS_REPLICAS sets the copies of the stream the service creates', () => {
    expect(loadConfig({ EVENTS_NATS_URL: 'nats://n:4222', EVENTS_NATS_REPLICAS: '3' }).feed?.replicas).toBe(3)
  })

  test('stream, subject prefix and source are taken as given', () => {
    const env = {
      EVENTS_NATS_URL: 'nats://n:4222',
      EVENTS_NATS_STREAM: 'PLANTS',
      EVENTS_NATS_SUBJECT_PREFIX: 'shop.plants',
      EVENTS_SOURCE: 'https://plants.example/store',
    }
    expect(loadConfig(env).feed).toMatchObject({
      stream: 'PLANTS',
      subjectPrefix: 'shop.plants',
      source: env.EVENTS_SOURCE,
    })
  })

  test.each([
    [{ EVENTS_NATS_URL: '127.0.0.1:4222' }, 'EVENTS_NATS_URL'],
    [{ EVENTS_NATS_URL: 'http://127.0.0.1:4222' }, 'EVENTS_NATS_URL'],
    [{ EVENTS_NATS_URL: 'nats://127.0.0.1' }, 'EVENTS_NATS_URL'],
    [{ EVENTS_NATS_URL: 'nats://a:4222,' }, 'EVENTS_NATS_URL'],
    [{ EVENTS_NATS_URL: 'nats://a:4222', EVENTS_NATS_STREAM: 'a.b' }, 'EVENTS_NATS_STREAM'],
    [{ EVENTS_NATS_URL: 'nats://a:4222', EVENTS_NATS_SUBJECT_PREFIX: 'a.*' }, 'EVENTS_NATS_SUBJECT_PREFIX'],
    [{ EVENTS_NATS_URL: 'nats://a:4222', EVENTS_NATS_SUBJECT_PREFIX: 'a..b' }, 'EVENTS_NATS_SUBJECT_PREFIX'],
  ])('a bad value %p stops the start naming %s', (env, variable) => {
    expect(() => loadConfig(env)).toThrow(expect.objectContaining({ code: 'BAD_SETTING' }))
    expect(() => loadConfig(env)).toThrow(variable)
  })
})
