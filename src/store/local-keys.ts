import {
  formatKeyEncryptionKeys,
  type KeyEncryptionKeys,
  keyEncryptionKeyId,
  newKeyEncryptionKey,
  parseKeyEncryptionKeys,
} from '../keys/key-encryption-keys.ts'
import { Failure } from '../shared/errors.ts'
import { readLocalFile, removeSecretFile, type SecretFileSteps, writeSecretFile } from './local-file.ts'

export const LOCAL_KEYS_FILE = 'key-encryption-keys'

// The embedded default needs no key settings: a KEK is made on first start and kept in DATA_DIR
// (mode 0600), as the token secret is (auth/local-secret.ts), in the form KEY_ENCRYPTION_KEYS
// takes, so that KEY_ENCRYPTION_KEYS_FILE can name it when the store moves to PostgreSQL. The
// file is written durably (store/local-file.ts) before any key is wrapped under it.
export async function loadOrCreateLocalKeys(dataDir: string): Promise<KeyEncryptionKeys> {
  const existing = await readLocalKeys(dataDir)
  if (existing) return existing
  const made = `${formatKeyEncryptionKeys([newKeyEncryptionKey()])}\n`
  return keysOf(await writeSecretFile(dataDir, LOCAL_KEYS_FILE, made))
}

// Replaces the file's list (`keys rotate`), durably.
export async function writeLocalKeys(
  dataDir: string,
  keys: KeyEncryptionKeys,
  steps?: SecretFileSteps,
): Promise<void> {
  await writeSecretFile(dataDir, LOCAL_KEYS_FILE, `${formatKeyEncryptionKeys(keys)}\n`, {
    replace: true,
    steps,
  })
}

// After a rotation to a key-encryption key of the operator's (KEY_ENCRYPTION_KEYS), the generated
// file keeps only the keys something is still wrapped under (`inUse`, by id); with none left it is
// removed. Returns the ids of the keys it dropped.
export async function retireLocalKeys(dataDir: string, inUse: Set<string>): Promise<string[]> {
  const keys = await readLocalKeys(dataDir)
  if (!keys) return []
  const kept = keys.filter((key) => inUse.has(keyEncryptionKeyId(key)))
  const dropped = keys.filter((key) => !kept.includes(key)).map(keyEncryptionKeyId)
  if (dropped.length === 0) return []
  if (kept.length === 0) await removeSecretFile(dataDir, LOCAL_KEYS_FILE)
  else await writeLocalKeys(dataDir, kept)
  return dropped
}

export async function readLocalKeys(dataDir: string): Promise<KeyEncryptionKeys | undefined> {
  const text = await readLocalFile(dataDir, LOCAL_KEYS_FILE)
  return text === undefined ? undefined : keysOf(text)
}

function keysOf(text: string): KeyEncryptionKeys {
  const keys = parseKeyEncryptionKeys(text)
  if (typeof keys === 'string') throw new Failure('BAD_SETTING', `DATA_DIR's ${LOCAL_KEYS_FILE} file ${keys}`)
  return keys
}
