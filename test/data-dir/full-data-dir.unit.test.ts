import { expect, test } from 'bun:test'
import { fullDataDir } from '../../src/data-dir/data-dir-failure.ts'
import { Failure } from '../../src/shared/errors.ts'

const REMEDY =
  'free space on its file system (df /srv/plants) or move DATA_DIR to a larger one, then try again'

function errnoError(code: string, message: string): Error {
  return Object.assign(new Error(message), { code })
}

test.each([
  [
    'a write of the service',
    errnoError('ENOSPC', 'ENOSPC: no space left on device, write'),
    'no space left on device',
  ],
  ['a user over quota', errnoError('EDQUOT', 'EDQUOT: disk quota exceeded, write'), 'disk quota exceeded'],
  [
    "PostgreSQL's disk_full under drizzle's wrapper",
    new Error('Failed query: insert into plants …', {
      cause: errnoError(
        '53100',
        'could not extend file "base/5/16569": wrote only 4096 of 8192 bytes at block 0',
      ),
    }),
    'PostgreSQL: could not extend file "base/5/16569": wrote only 4096 of 8192 bytes at block 0',
  ],
  [
    'initdb saying so',
    new Failure(
      'EMBEDDED_UNAVAILABLE',
      'initdb failed for /srv/plants/postgres: FATAL: could not write to file "pg_wal/x": No space left on device',
    ),
    'No space left on device',
  ],
])('given %s, then DATA_DIR is said to be full in one line', (_, error, said) => {
  const failure = fullDataDir('/srv/plants', error)
  expect(failure?.message).toBe(`DATA_DIR /srv/plants is full (${said}): ${REMEDY}`)
  expect(failure?.exitCode).toBe(1)
})

test('given any other error, then it is not said to be a full disk', () => {
  expect(fullDataDir('/srv/plants', errnoError('ECONNREFUSED', 'connect ECONNREFUSED'))).toBeUndefined()
  expect(fullDataDir('/srv/plants', errnoError('23505', 'duplicate key value'))).toBeUndefined()
  expect(fullDataDir('/srv/plants', 'ENOSPC')).toBeUndefined()
})
