import { afterEach, beforeEach, expect, test } from 'bun:test'
import { mkdir, mkdtemp, readdir, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type DataDir, openDataDir } from '../../src/data-dir/data-dir.ts'
import { lookAt, lookWithLs } from '../../src/data-dir/data-dir-parents.ts'

// DATA_DIR's files are reached in the folder that was checked, through its descriptor (Linux's
// /proc/self/fd/N): whatever is put at DATA_DIR's name after the check is not written or read.

let base: string
let opened: DataDir | undefined
beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'plant-store-data-dir-'))
})
afterEach(async () => {
  opened?.close()
  opened = undefined
  await rm(base, { recursive: true, force: true })
})

// DATA_DIR opened and checked, then moved away and another folder put at its name.
async function swappedAfterCheck() {
  const dataDir = join(base, 'data')
  opened = await openDataDir(dataDir)
  await writeFile(join(dataDir, 'auth-secret'), 'checked\n', { mode: 0o600 })
  await rename(dataDir, join(base, 'checked'))
  await mkdir(dataDir, { mode: 0o755 })
  await writeFile(join(dataDir, 'auth-secret'), 'swapped in\n', { mode: 0o600 })
  return { dataDir, checked: join(base, 'checked'), folder: opened }
}

test('given DATA_DIR swapped for another folder after its check, when a secret is read and another written, then both are the checked folder’s', async () => {
  const { dataDir, checked, folder } = await swappedAfterCheck()
  expect(await folder.readSecret('auth-secret')).toBe('checked\n')
  await folder.writeSecret('key-encryption-keys', 'kek\n')
  expect((await readdir(checked)).sort()).toEqual(['auth-secret', 'key-encryption-keys'])
  expect(await readdir(dataDir)).toEqual(['auth-secret'])
  expect(await readFile(join(dataDir, 'auth-secret'), 'utf8')).toBe('swapped in\n')
})

test('given DATA_DIR swapped for another folder after its check, when its lock is taken, then the lock file is the checked folder’s', async () => {
  const { dataDir, checked, folder } = await swappedAfterCheck()
  const unlock = await folder.lock()
  try {
    expect(await readFile(join(checked, 'server.pid'), 'utf8')).toBe(`${process.pid}\n`)
    expect(await readdir(dataDir)).toEqual(['auth-secret'])
  } finally {
    await unlock()
  }
})

test('given a folder, a sticky folder, a file and a link, when ls(1) is asked of each, then it says what the file system says', async () => {
  const sticky = join(base, 'sticky')
  await mkdir(sticky, { mode: 0o755 })
  await Bun.$`chmod 1777 ${sticky}`
  await writeFile(join(base, 'file'), '', { mode: 0o640 })
  await symlink('../some where/else', join(base, 'a link'))
  for (const path of ['/', base, sticky, join(base, 'file'), join(base, 'a link')]) {
    const [said, found] = await Promise.all([lookWithLs(path), lookAt(path)])
    expect({ path, ...said, mode: (said?.mode ?? 0) & 0o7777 }).toEqual({
      path,
      ...found,
      mode: (found?.mode ?? 0) & 0o7777,
    })
  }
  expect(await lookWithLs(join(base, 'missing'))).toBeUndefined()
})
