import process from 'node:process'
import type { Config } from '../config/config.ts'
import { rotateKeys } from '../event-log/rotate-keys.ts'
import {
  type KeyEncryptionKeys,
  keyEncryptionKeyId,
  newKeyEncryptionKey,
} from '../keys/key-encryption-keys.ts'
import { Failure } from '../shared/errors.ts'
import { openPostgres } from '../store/database.ts'
import { writeLocalKeys } from '../store/local-keys.ts'
import { command } from './command.ts'
import { withStorage } from './storage.ts'

export const keysRotateCommand = command({
  name: 'keys rotate',
  purpose: "re-wrap every owner's key under the first key-encryption key; then the others may be dropped",
  notes: [
    'with KEY_ENCRYPTION_KEYS: put the new key first and keep the old ones after it on every instance, run this, then drop the old ones',
    'on the embedded store without KEY_ENCRYPTION_KEYS: makes a new key in DATA_DIR, re-wraps, and drops the old one (stop the service first)',
    'beside running writers; a run cut short is completed by the next',
  ],
  reads: ['storage'],
  refusals: 'the service holds the embedded DATA_DIR whose generated key this would replace',
  run: (_parsed, config) => rotate(config),
})

async function rotate(config: Config): Promise<number> {
  const say = (text: string) => process.stderr.write(`keys rotate: ${text}\n`)
  const generated = config.storage.kind === 'embedded' && config.storage.keys === undefined
  return withStorage(config, async (db, storage) => {
    let keys: KeyEncryptionKeys = storage.settings.keys ?? []
    if (generated) {
      // The service's sessions hold the key list they started with: a new key would be unknown to them.
      if (!storage.dataDir) {
        throw new Failure(
          'DATA_DIR_IN_USE',
          `a service holds DATA_DIR ${config.dataDir}: stop it, run keys rotate, start it again`,
        )
      }
      keys = [newKeyEncryptionKey(), ...keys]
      await writeLocalKeys(storage.dataDir, keys)
    }
    // New sessions, given the new list: the storage's own were given the old one.
    const session = generated ? openPostgres({ ...storage.settings, keys }) : { db, close: async () => {} }
    try {
      const { rewrapped, kept } = await rotateKeys(session.db, keys, {
        onBatch: (done) => say(`${done} keys re-wrapped`),
      })
      if (generated && storage.dataDir) await writeLocalKeys(storage.dataDir, keys.slice(0, 1))
      const [first] = keys
      say(
        `every owner's key is wrapped under key-encryption key ${first ? keyEncryptionKeyId(first) : '?'} (${rewrapped} re-wrapped, ${kept} already were)${generated ? '; the old key is dropped' : '; the others may be dropped now'}`,
      )
      process.stdout.write(`${rewrapped}\n`)
      return 0
    } finally {
      await session.close()
    }
  })
}
