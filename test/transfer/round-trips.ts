import { openTestStorage, type StorageKind, type TestStorage } from '../support/storage.ts'

// Each move an export makes between the two kinds of store: from the first, into the second.
export const ROUND_TRIPS: [from: StorageKind, to: StorageKind][] = [
  ['embedded', 'postgres'],
  ['postgres', 'embedded'],
]

// A new store to export from and a new one to import into.
export function openRoundTrip(from: StorageKind, to: StorageKind): Promise<[TestStorage, TestStorage]> {
  return Promise.all([openTestStorage(from), openTestStorage(to)])
}
