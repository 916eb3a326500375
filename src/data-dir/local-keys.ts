import { EARLIER_WRAPPED_KEY_BYTES, WRAPPED_KEY_BYTES } from '../crypto/envelope.ts'
import {
  formatKeyEncryptionKeys,
  type KeyEncryptionKeys,
  keyEncryptionKeyId,
  newKeyEncryptionKey,
  parseKeyEncryptionKeys,
} from '../crypto/key-encryption-keys.ts'
import { postgresClient } from '../database/postgres-client.ts'
import { Failure } from '../shared/errors.ts'
import type { DataDir } from './data-dir.ts'
import type { SecretFileSteps } from './local-file.ts'

export const LOCAL_KEYS_FILE = 'key-encryption-keys'

// The embedded default needs no key settings: a KEK is made on first start and kept in DATA_DIR
// (mode 0600), as the token secret is (auth/local-secret.ts), in the form KEY_ENCRYPTION_KEYS
// takes, so that KEY_ENCRYPTION_KEYS_FILE can name it when the store moves to PostgreSQL. The
// file is written durably (data-dir/local-file.ts) before any key is wrapped under it.
//
// Only a store that holds no wrapped key yet gets a new one: once the file is gone (`keys rotate`
// removes it when it retires the generated KEK for an operator's), a new key would open nothing,
// and a key made and kept is one more secret beside the data. So a start, or a command, without
// the KEK that the stored keys need stops in one line, whatever runs it, and writes nothing.
// `databaseUrl`: the store's server, asked which KEKs its stored keys are wrapped under.
export async function generatedKeys(dataDir: DataDir, databaseUrl: string): Promise<KeyEncryptionKeys> {
  const existing = await readLocalKeys(dataDir)
  const needed = await wrappingKeyIds(databaseUrl)
  const have = new Set((existing ?? []).map(keyEncryptionKeyId))
  const missing = needed.filter((id) => !have.has(id))
  if (missing.length > 0) {
    const file = existing ? `its ${LOCAL_KEYS_FILE} file lacks` : `it holds no ${LOCAL_KEYS_FILE} file with`
    throw new Failure(
      'BAD_SETTING',
      `KEY_ENCRYPTION_KEYS is not set, and DATA_DIR ${dataDir.path} cannot open its owners' keys: ${file} the key-encryption key ${missing.join(', ')} they are wrapped under; set KEY_ENCRYPTION_KEYS (or KEY_ENCRYPTION_KEYS_FILE) to the keys the store was last run with (no key is made in its place)`,
    )
  }
  if (existing) return existing
  const made = `${formatKeyEncryptionKeys([newKeyEncryptionKey()])}\n`
  return keysOf(await dataDir.writeSecret(LOCAL_KEYS_FILE, made))
}

// The ids of the KEKs that the stored owners' keys are wrapped under, either form; none before the
// migrations have made the table, or while it holds only the raw keys of an earlier version.
async function wrappingKeyIds(databaseUrl: string): Promise<string[]> {
  const sql = postgresClient(databaseUrl, { max: 1, onnotice: () => {} })
  try {
    const [table] = await sql<{ present: boolean }[]>`select to_regclass('owner_keys') is not null as present`
    if (!table?.present) return []
    const rows = await sql<{ id: string }[]>`
      select distinct encode(substr(key, 1, 4), 'hex') as id from owner_keys
      where length(key) in (${EARLIER_WRAPPED_KEY_BYTES}, ${WRAPPED_KEY_BYTES}) order by 1`
    return rows.map((row) => row.id)
  } finally {
    await sql.end()
  }
}

// Replaces the file's list (`keys rotate`), durably.
export async function writeLocalKeys(
  dataDir: DataDir,
  keys: KeyEncryptionKeys,
  steps?: SecretFileSteps,
): Promise<void> {
  await dataDir.writeSecret(LOCAL_KEYS_FILE, `${formatKeyEncryptionKeys(keys)}\n`, { replace: true, steps })
}

// After a rotation to a key-encryption key of the operator's (KEY_ENCRYPTION_KEYS), the generated
// file keeps only the keys something is still wrapped under (`inUse`, by id); with none left it is
// removed. Returns the ids of the keys it dropped.
export async function retireLocalKeys(dataDir: DataDir, inUse: Set<string>): Promise<string[]> {
  const keys = await readLocalKeys(dataDir)
  if (!keys) return []
  const kept = keys.filter((key) => inUse.has(keyEncryptionKeyId(key)))
  const dropped = keys.filter((key) => !kept.includes(key)).map(keyEncryptionKeyId)
  if (dropped.length === 0) return []
  if (kept.length === 0) await dataDir.removeSecret(LOCAL_KEYS_FILE)
  else await writeLocalKeys(dataDir, kept)
  return dropped
}

export async function readLocalKeys(dataDir: DataDir): Promise<KeyEncryptionKeys | undefined> {
  const text = await dataDir.readSecret(LOCAL_KEYS_FILE)
  return text === undefined ? undefined : keysOf(text)
}

function keysOf(text: string): KeyEncryptionKeys {
  const keys = parseKeyEncryptionKeys(text)
  if (typeof keys === 'string') throw new Failure('BAD_SETTING', `DATA_DIR's ${LOCAL_KEYS_FILE} file ${keys}`)
  return keys
}
