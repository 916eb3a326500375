import { join } from 'node:path'
import process from 'node:process'
import { createInterface } from 'node:readline/promises'
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
  args: '[--yes]',
  purpose: "re-wrap every owner's key under the first key-encryption key; then the others may be dropped",
  notes: [
    'with KEY_ENCRYPTION_KEYS: put the new key first and keep the old ones after it on every instance, run this, then drop the old ones',
    'on the embedded store without KEY_ENCRYPTION_KEYS: makes a new key in DATA_DIR, re-wraps, and drops the old one (stop the service first); exports taken before then restore only with the old one: copy DATA_DIR/key-encryption-keys outside DATA_DIR first, and keep it until they expire',
    "on the embedded store with KEY_ENCRYPTION_KEYS: drops from DATA_DIR's generated key file the keys nothing is wrapped under any more",
    'before it drops a key from DATA_DIR it asks on a terminal; --yes drops it without asking, and without a terminal or --yes the key is kept',
    'beside running writers; a run cut short is completed by the next',
  ],
  options: { yes: { type: 'boolean' } },
  reads: ['storage'],
  refusals: 'the service holds the embedded DATA_DIR whose generated key this would replace',
  run: ({ values }, config) => rotate(config, values.yes === true ? async () => true : askOnTerminal),
})

// Whether a key may be dropped from DATA_DIR, where it is the only copy: yes or no from a person
// at a terminal, undefined where no one can be asked.
type MayDrop = (question: string) => Promise<boolean | undefined>

async function askOnTerminal(question: string): Promise<boolean | undefined> {
  if (!process.stdin.isTTY || !process.stderr.isTTY) return undefined
  const asking = createInterface({ input: process.stdin, output: process.stderr })
  try {
    return /^y(es)?$/i.test((await asking.question(`${question} [y/N] `)).trim())
  } finally {
    asking.close()
  }
}

async function rotate(config: Config, mayDrop: MayDrop): Promise<number> {
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
      const dropped = await dropUnused({ config, db, keys, dataDir: storage.dataDir, mayDrop })
      const wrapped = `every owner's key is wrapped under key-encryption key ${first ? keyEncryptionKeyId(first) : '?'} (${rewrapped} re-wrapped, ${kept} already were)`
      const after =
        dropped.length > 0
          ? `; dropped from DATA_DIR: ${dropped.join(', ')}, under which nothing is wrapped any more`
          : generated
            ? ''
            : '; the others may be dropped now'
      process.stdout.write(`${wrapped}${after}\n`)
      return 0
    },
    { long: true },
  )
}

type Unused = {
  config: Config
  db: Database
  keys: KeyEncryptionKeys
  dataDir: string | undefined
  mayDrop: MayDrop
}

// The keys of DATA_DIR's generated file that nothing is wrapped under any more, dropped once asked
// (the ids of those dropped): the generated key just replaced, or those an operator's keys retired.
async function dropUnused({ config, db, keys, dataDir, mayDrop }: Unused): Promise<string[]> {
  if (config.storage.kind !== 'embedded') return []
  const folder = dataDir ?? config.storage.dataDir
  const generated = config.storage.keys === undefined
  const inUse = generated ? new Set<string>() : await wrappingIds(db)
  const unused = generated
    ? keys.slice(1).map(keyEncryptionKeyId)
    : ((await withDataDir(folder, readLocalKeys)) ?? [])
        .map(keyEncryptionKeyId)
        .filter((id) => !inUse.has(id))
  if (unused.length === 0) return []
  const say = (text: string) => process.stderr.write(`keys rotate: ${text}\n`)
  const file = join(folder, LOCAL_KEYS_FILE)
  const named = `key-encryption key${unused.length > 1 ? 's' : ''} ${unused.join(', ')}`
  const answer = await mayDrop(
    `drop ${named} from ${file}? exports taken before now restore only with it, and the file is its only copy unless one was made`,
  )
  if (answer !== true) {
    const how = answer === undefined ? 'run keys rotate --yes to drop it' : 'run keys rotate again to drop it'
    say(
      `kept ${named} in ${file}; nothing is wrapped under it any more: copy it outside DATA_DIR, then ${how}`,
    )
    return []
  }
  say(unrestorableExports(unused, folder))
  if (generated) {
    await withDataDir(folder, (opened) => writeLocalKeys(opened, keys.slice(0, 1)))
    return unused
  }
  return withDataDir(folder, (opened) => retireLocalKeys(opened, inUse))
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
