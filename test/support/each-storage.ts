import { afterAll, beforeAll, describe } from 'bun:test'
import { openTestStorage, STORAGE_KINDS, type StorageKind, type TestStorage } from './storage.ts'

// Declares `tests` once for each kind of store, each kind in a describe block of its own on a new
// store: opened (and `given` run on it) before the block's tests, closed after them. `storage()` is
// that store, from the block's hooks and tests on.
export function describeEachStorage(
  title: (kind: StorageKind) => string,
  given: (storage: TestStorage) => Promise<void>,
  tests: (storage: () => TestStorage, kind: StorageKind) => void,
  givenTimeoutMs?: number,
): void {
  for (const kind of STORAGE_KINDS)
    describe(title(kind), () => {
      let opened: TestStorage | undefined
      beforeAll(async () => {
        opened = await openTestStorage(kind)
        await given(opened)
      }, givenTimeoutMs)
      afterAll(() => opened?.close())
      const storage = () => {
        if (!opened) throw new Error(`no ${kind} store: it is opened before the tests`)
        return opened
      }
      tests(storage, kind)
    })
}
