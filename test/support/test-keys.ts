import { Buffer } from 'node:buffer'
import { unwrapOwnerKey } from '../../src/crypto/envelope.ts'
import type { KeyEncryptionKeys } from '../../src/crypto/key-encryption-keys.ts'

// The key-encryption key every test store on PostgreSQL shares unless a test says otherwise:
// spawned servers and commands get it as KEY_ENCRYPTION_KEYS (server-process.ts), stores opened
// in process as TEST_KEYS.
export const TEST_KEY_ENCRYPTION_KEYS = Buffer.alloc(32, 7).toString('base64')
export const TEST_KEYS: KeyEncryptionKeys = [new Uint8Array(Buffer.alloc(32, 7))]

// A child's environment with the test KEK when it uses PostgreSQL and names none of its own.
export function withTestKeys<Env extends Record<string, string | undefined>>(env: Env): Env {
  if (env.DATABASE_URL === undefined || 'KEY_ENCRYPTION_KEYS' in env || 'KEY_ENCRYPTION_KEYS_FILE' in env)
    return env
  return { ...env, KEY_ENCRYPTION_KEYS: TEST_KEY_ENCRYPTION_KEYS }
}

// An export's text with each key line's key unwrapped (raw, base64): an import wraps every key
// again under its store's first key-encryption key, with a fresh IV, so two exports of the same
// keys differ only there. Today's form is bound to the pseudonym of its line.
export function withRawKeys(text: string, keys: KeyEncryptionKeys = TEST_KEYS): string {
  const keyLine = /("key":\{"pseudonym":"([0-9a-f]+)".*?"key":")([^"]+)(")/g
  return text.replace(keyLine, (_, before: string, pseudonym: string, key: string, after: string) => {
    const raw = unwrapOwnerKey(new Uint8Array(Buffer.from(key, 'base64')), keys, pseudonym)
    if ('missing' in raw) throw new Error(`a key under an unknown key-encryption key ${raw.missing}`)
    return `${before}${Buffer.from(raw).toString('base64')}${after}`
  })
}
