import { rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import {
  formatKeyEncryptionKeys,
  type KeyEncryptionKeys,
  newKeyEncryptionKey,
  parseKeyEncryptionKeys,
} from '../keys/key-encryption-keys.ts'
import { Failure } from '../shared/errors.ts'
import { createLocalFileOnce, readLocalFile } from './local-file.ts'

export const LOCAL_KEYS_FILE = 'key-encryption-keys'

// The embedded default needs no key settings: a KEK is made on first start and kept in DATA_DIR
// (mode 0600), as the token secret is (auth/local-secret.ts), in the form KEY_ENCRYPTION_KEYS
// takes, so that KEY_ENCRYPTION_KEYS_FILE can name it when the store moves to PostgreSQL.
export async function loadOrCreateLocalKeys(dataDir: string): Promise<KeyEncryptionKeys> {
  const existing = await readLocalKeys(dataDir)
  if (existing) return existing
  const made = `${formatKeyEncryptionKeys([newKeyEncryptionKey()])}\n`
  return keysOf(await createLocalFileOnce(dataDir, LOCAL_KEYS_FILE, made))
}

// Replaces the file's list (`keys rotate`): written aside, then renamed over it.
export async function writeLocalKeys(dataDir: string, keys: KeyEncryptionKeys): Promise<void> {
  const path = join(dataDir, LOCAL_KEYS_FILE)
  await writeFile(`${path}.new`, `${formatKeyEncryptionKeys(keys)}\n`, { mode: 0o600 })
  await rename(`${path}.new`, path)
}

async function readLocalKeys(dataDir: string): Promise<KeyEncryptionKeys | undefined> {
  const text = await readLocalFile(dataDir, LOCAL_KEYS_FILE)
  return text === undefined ? undefined : keysOf(text)
}

function keysOf(text: string): KeyEncryptionKeys {
  const keys = parseKeyEncryptionKeys(text)
  if (typeof keys === 'string') throw new Failure('BAD_SETTING', `DATA_DIR's ${LOCAL_KEYS_FILE} file ${keys}`)
  return keys
}
