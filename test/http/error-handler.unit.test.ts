import { describe, expect, test } from 'bun:test'
import { failureOf } from '../../src/http/error-handler.ts'
import { Failure } from '../../src/shared/errors.ts'

// Every error the app answers is a Failure, and its status is the one the codes' table gives.
const request = new Request('http://plants.test/plants', { method: 'DELETE' })
const servedOn = (methods: string[]) => () => methods

describe('the errors Elysia raises, as failures', () => {
  test('given a path served by other methods, when none matches, then METHOD_NOT_ALLOWED with Allow', () => {
    const failure = failureOf(
      'NOT_FOUND',
      new Error('NOT_FOUND'),
      request,
      '/plants',
      servedOn(['GET', 'POST']),
    )
    expect(failure?.code).toBe('METHOD_NOT_ALLOWED')
    expect(failure?.status).toBe(405)
    expect(failure?.headers).toEqual({ allow: 'GET, POST' })
    expect(failure?.message).toBe('DELETE is not allowed on /plants')
  })

  test('given a path nothing serves, then NOT_FOUND naming it', () => {
    const failure = failureOf('NOT_FOUND', new Error('NOT_FOUND'), request, '/pots', servedOn([]))
    expect(failure).toEqual(new Failure('NOT_FOUND', 'no such path: /pots'))
    expect(failure?.status).toBe(404)
  })

  test('given a body that does not parse, then BAD_REQUEST', () => {
    const failure = failureOf('PARSE', new Error('bad json'), request, '/plants', servedOn([]))
    expect(failure?.code).toBe('BAD_REQUEST')
    expect(failure?.message).toBe('the body could not be parsed')
  })

  test('given a validation error with a path, then BAD_REQUEST naming the field', () => {
    const error = Object.assign(new Error('invalid'), { valueError: { path: '/name', message: 'too long' } })
    expect(failureOf('VALIDATION', error, request, '/plants', servedOn([]))).toEqual(
      new Failure('BAD_REQUEST', 'name: too long'),
    )
  })

  test('given a database that cannot be reached, then UNAVAILABLE with Retry-After', () => {
    const error = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
    const failure = failureOf('UNKNOWN', error, request, '/plants', servedOn([]))
    expect(failure?.status).toBe(503)
    expect(failure?.headers).toEqual({ 'retry-after': '5' })
  })

  test('given a bug, then no failure: the handler answers 500', () => {
    expect(
      failureOf('UNKNOWN', new TypeError('x is undefined'), request, '/plants', servedOn([])),
    ).toBeUndefined()
  })
})
