import { expect, test } from 'bun:test'
import { readBearerToken } from '../../src/auth/authentication.ts'

test.each(['Bearer abc.def.ghi', 'bearer abc.def.ghi', 'BEARER abc.def.ghi', 'Bearer   abc.def.ghi'])(
  'the scheme of %p is matched case-insensitively',
  (header) => {
    expect(readBearerToken(header)).toEqual({ kind: 'token', token: 'abc.def.ghi' })
  },
)

test.each([null, undefined, '', '   ', 'Basic dXNlcjpwYXNz', 'Bearerabc'])(
  '%p carries no bearer token',
  (header) => {
    expect(readBearerToken(header)).toEqual({ kind: 'missing' })
  },
)

test.each(['Bearer', 'Bearer ', 'Bearer a b', 'Bearer a,b'])('%p is a malformed bearer header', (header) => {
  expect(readBearerToken(header).kind).toBe('malformed')
})
