import { join } from 'node:path'
import process from 'node:process'
import { sql } from 'drizzle-orm'
import type { Config } from '../config/config.ts'
import {
  type KeyEncryptionKeys,
  keyEncryptionKeyId,
  newKeyEncryptionKey,
} from '../crypto/key-encryption-keys.ts'
import { createKeyring } from '../crypto/keyring.ts'
import { withDataDir } from '../data-dir/data-dir.ts'
import { LOCAL_KEYS_FILE, readLocalKeys, retireLocalKeys, writeLocalKeys } from '../data-dir/local-keys.ts'
import { type Database, rowsOf } from '../database/database.ts'
import { rotateKeys } from '../keys/rotate-keys.ts'
import { Failure } from '../shared/errors.ts'
import { command } from './command.ts'
import { stderrProgress } from './progress.ts'
import { withStorage } from './storage.ts'

export const keysRotateCommand = command({
  name: 'keys rotate',
  purpose: "re-wrap every owner's key under the first key-encryption key; then the others may be dropped",
  notes: [
    'with KEY_ENCRYPTION_KEYS: put the new key first and keep the old ones after it on every instance, run this, then drop the old ones',
    'on the embedded store without KEY_ENCRYPTION_KEYS: makes a new key in DATA_DIR, re-wraps, and drops the old one (stop the service first); exports taken before then restore only with the old one: copy DATA_DIR/key-encryption-keys outside DATA_DIR first, and keep it until they expire',
    "on the embedded store with KEY_ENCRYPTION_KEYS: drops from DATA_DIR's generated key file the keys nothing is wrapped under any more",
    'beside running writers; a run cut short is completed by the next',
  ],
  reads: ['storage'],
  refusals: 'the service holds the embedded DATA_DIR whose generated key this would replace',
  run: (_parsed, config) => rotate(config),
})

async function rotate(config: Config): Promise<number> {
  const say = (text: string) => process.stderr.write(`keys rotate: ${text}\n`)
  const generated = config.storage.kind === 'embedded' && config.storage.keys === undefined
  return withStorage(
    config,
    async (db, storage) => {
      let keys: KeyEncryptionKeys = storage.settings.keys ?? []
      if (generated) {
        // The service unwraps with the list it started with: a new key would be unknown to it.
        if (!storage.dataDir) {
          throw new Failure(
            'DATA_DIR_IN_USE',
            `a service holds DATA_DIR ${config.dataDir}: stop it, run keys rotate, start it again`,
          )
        }
        keys = [newKeyEncryptionKey(), ...keys]
        // On disk before anything is wrapped under it.
        await withDataDir(storage.dataDir, (dataDir) => writeLocalKeys(dataDir, keys))
      }
      const progress = stderrProgress({ label: 'keys rotate', unit: 'keys' })
      const { rewrapped, kept } = await rotateKeys(db, createKeyring(keys), {
        onBatch: ({ rewrapped, total }) => progress.report({ done: rewrapped, total }),
      }).finally(progress.finish)
      const [first] = keys
      let dropped: string[] = []
      if (generated && storage.dataDir) {
        say(unrestorableExports(keys.slice(1).map(keyEncryptionKeyId), storage.dataDir))
        await withDataDir(storage.dataDir, (dataDir) => writeLocalKeys(dataDir, keys.slice(0, 1)))
        dropped = keys.slice(1).map(keyEncryptionKeyId)
      } else if (config.storage.kind === 'embedded') {
        const { dataDir } = config.storage
        const inUse = await wrappingIds(db)
        const retiring = ((await withDataDir(dataDir, readLocalKeys)) ?? [])
          .map(keyEncryptionKeyId)
          .filter((id) => !inUse.has(id))
        if (retiring.length > 0) say(unrestorableExports(retiring, dataDir))
        dropped = await withDataDir(dataDir, (folder) => retireLocalKeys(folder, inUse))
      }
      say(
        `every owner's key is wrapped under key-encryption key ${first ? keyEncryptionKeyId(first) : '?'} (${rewrapped} re-wrapped, ${kept} already were)${dropped.length > 0 ? `; dropped from DATA_DIR: ${dropped.join(', ')}, under which nothing is wrapped any more` : generated ? '' : '; the others may be dropped now'}`,
      )
      process.stdout.write(`${rewrapped}\n`)
      return 0
    },
    { long: true },
  )
}

// Said before the generated KEKs are dropped from DATA_DIR, where they are the only copy: the
// exports taken before hold keys wrapped under them, and restore only with them.
function unrestorableExports(ids: string[], dataDir: string): string {
  const named = `key-encryption key ${ids.join(', ')}`
  return `exports taken before now (those whose events export named ${named}) restore only with it, and this drops it from ${join(dataDir, LOCAL_KEYS_FILE)}, its only copy unless one was made: keep such a copy outside DATA_DIR until those exports expire (made by copying the file before a rotation: docs/operating.md, Backups)`
}

// The ids of the key-encryption keys some stored key is wrapped under.
async function wrappingIds(db: Database): Promise<Set<string>> {
  const rows = rowsOf<{ id: string }>(
    await db.execute(sql`select distinct encode(substr(key, 1, 4), 'hex') as id from owner_keys`),
  )
  return new Set(rows.map((row) => row.id))
}
