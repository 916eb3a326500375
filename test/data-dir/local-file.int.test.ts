import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type DataDir, openDataDir } from '../../src/data-dir/data-dir.ts'
import { DISK_STEPS, type SecretFileSteps } from '../../src/data-dir/local-file.ts'

// The disk's own steps, each recorded by name and by the file it touches (relative to `dir`, the
// path by which the folder is reached).
function recorded(dir: string) {
  const calls: string[] = []
  const name = (path: string) =>
    path === dir ? '.' : path.slice(dir.length + 1).replace(/\.[0-9a-f-]+\.tmp$/, '.tmp')
  const steps: SecretFileSteps = {
    write: (path, text) => {
      calls.push(`write ${name(path)}`)
      return DISK_STEPS.write(path, text)
    },
    sync: (path) => {
      calls.push(`sync ${name(path)}`)
      return DISK_STEPS.sync(path)
    },
    place: (from, to, replace) => {
      calls.push(`${replace ? 'rename' : 'link'} ${name(from)} ${name(to)}`)
      return DISK_STEPS.place(from, to, replace)
    },
    remove: (path) => {
      calls.push(`remove ${name(path)}`)
      return DISK_STEPS.remove(path)
    },
  }
  return { calls, steps }
}

describe('a secret file in DATA_DIR', () => {
  let dir: string
  let folder: DataDir
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'secret-file-'))
    folder = await openDataDir(dir)
  })
  afterEach(async () => {
    folder.close()
    await rm(dir, { recursive: true, force: true })
  })

  test('given no file, when it is written, then the text is synced before it is put in place, and the folder after', async () => {
    const { calls, steps } = recorded(folder.at('.'))
    expect(await folder.writeSecret('kek', 'one\n', { steps })).toBe('one\n')
    expect(calls).toEqual(['write kek.tmp', 'sync kek.tmp', 'link kek.tmp kek', 'remove kek.tmp', 'sync .'])
    expect(await readFile(join(dir, 'kek'), 'utf8')).toBe('one\n')
    expect((await stat(join(dir, 'kek'))).mode & 0o777).toBe(0o600)
    expect(await readdir(dir)).toEqual(['kek'])
  })

  test('given a file, when it is replaced, then the new text is synced, renamed over it, and the folder synced', async () => {
    await folder.writeSecret('kek', 'old\n')
    const { calls, steps } = recorded(folder.at('.'))
    await folder.writeSecret('kek', 'new\n', { replace: true, steps })
    expect(calls).toEqual(['write kek.tmp', 'sync kek.tmp', 'rename kek.tmp kek', 'sync .'])
    expect(await readFile(join(dir, 'kek'), 'utf8')).toBe('new\n')
    expect(await readdir(dir)).toEqual(['kek'])
  })

  test('given two writers at once, when both create the file, then the first text wins for both and no temporary file stays', async () => {
    const [first, second] = await Promise.all([
      folder.writeSecret('secret', 'a\n'),
      folder.writeSecret('secret', 'b\n'),
    ])
    const held = await readFile(join(dir, 'secret'), 'utf8')
    expect([first, second]).toEqual([held, held])
    expect(await readdir(dir)).toEqual(['secret'])
  })

  test('given a file, when a replacement fails before it is placed, then the old text stays and no temporary file', async () => {
    await folder.writeSecret('kek', 'old\n')
    const failing: SecretFileSteps = {
      ...DISK_STEPS,
      sync: async () => {
        throw new Error('disk gone')
      },
    }
    await expect(folder.writeSecret('kek', 'new\n', { replace: true, steps: failing })).rejects.toThrow(
      'disk gone',
    )
    expect(await readFile(join(dir, 'kek'), 'utf8')).toBe('old\n')
    expect(await readdir(dir)).toEqual(['kek'])
  })
})
