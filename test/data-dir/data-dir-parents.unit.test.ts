import { expect, test } from 'bun:test'
import { type Entry, type Look, walkToDataDir } from '../../src/data-dir/data-dir-parents.ts'

// The walk to DATA_DIR over a file system described in a table: what each path is, not following
// a link. This process is uid 1000; 0 is root, 2000 another user.
const ME = 1000
const folder = (uid: number, mode: number): Entry => ({ kind: 'folder', uid, mode })
const link = (uid: number, target: string): Entry => ({ kind: 'link', uid, mode: 0o777, target })

function disk(entries: Record<string, Entry>): Look {
  return async (path) => entries[path]
}

const SYSTEM = { '/': folder(0, 0o755), '/tmp': folder(0, 0o1777), '/srv': folder(0, 0o755) }

test.each<[string, Record<string, Entry>, string, object]>([
  [
    'every folder root’s or mine',
    { '/srv/me': folder(ME, 0o700), '/srv/me/data': folder(ME, 0o755) },
    '/srv/me/data',
    {},
  ],
  ['DATA_DIR not made yet', { '/srv/me': folder(ME, 0o755) }, '/srv/me/new/data', { missing: true }],
  [
    'a folder others may write in',
    { '/srv/x': folder(0, 0o777) },
    '/srv/x/data',
    { unsafe: { path: '/srv/x', owner: 0, mode: 0o777 } },
  ],
  [
    'a folder its group may write in',
    { '/srv/x': folder(ME, 0o775) },
    '/srv/x/data',
    { unsafe: { path: '/srv/x', owner: ME, mode: 0o775 } },
  ],
  [
    'a folder of another user',
    { '/srv/x': folder(2000, 0o755) },
    '/srv/x/data',
    { unsafe: { path: '/srv/x', owner: 2000 } },
  ],
  [
    'a sticky folder above a folder of mine',
    { '/tmp/me': folder(ME, 0o755) },
    '/tmp/me/data',
    { missing: true },
  ],
  [
    'a sticky folder above another user’s',
    { '/tmp/x': folder(2000, 0o755) },
    '/tmp/x/data',
    { unsafe: { path: '/tmp/x', owner: 2000 } },
  ],
  [
    'DATA_DIR itself another user’s in a sticky folder (checked apart)',
    { '/tmp/data': folder(2000, 0o755) },
    '/tmp/data',
    {},
  ],
  [
    'another user’s link in a sticky folder',
    { '/tmp/way': link(2000, '/srv/me'), '/srv/me': folder(ME, 0o755) },
    '/tmp/way/data',
    { unsafe: { path: '/tmp/way', owner: 2000, openFolder: { path: '/tmp', mode: 0o1777 } } },
  ],
  [
    'my link in a sticky folder',
    { '/tmp/way': link(ME, '/srv/me'), '/srv/me': folder(ME, 0o755) },
    '/tmp/way/data',
    { missing: true },
  ],
  [
    'a link of root’s to a folder below an open one',
    { '/srv/way': link(0, '/srv/x/me'), '/srv/x': folder(0, 0o777) },
    '/srv/way/data',
    { unsafe: { path: '/srv/x', owner: 0, mode: 0o777 } },
  ],
  [
    'a relative link climbing to an open folder',
    { '/srv/me': folder(ME, 0o755), '/srv/me/way': link(ME, '../x/y'), '/srv/x': folder(0, 0o757) },
    '/srv/me/way/data',
    { unsafe: { path: '/srv/x', owner: 0, mode: 0o757 } },
  ],
  ['links that loop', { '/srv/a': link(0, '/srv/b'), '/srv/b': link(0, '/srv/a') }, '/srv/a/data', {}],
])('given %s, then the walk says so', async (_, entries, dataDir, expected) => {
  expect(await walkToDataDir(dataDir, ME, disk({ ...SYSTEM, ...entries }))).toEqual(expected)
})

test('given a root folder others may write in, then the walk stops there', async () => {
  expect(await walkToDataDir('/data', ME, disk({ '/': folder(0, 0o777) }))).toEqual({
    unsafe: { path: '/', owner: 0, mode: 0o777 },
  })
})
