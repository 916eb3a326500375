import { Buffer } from 'node:buffer'
import { newOwnerKey, newPseudonym, unwrapOwnerKey, wrapOwnerKey } from './envelope.ts'
import type { KeyEncryptionKeys } from './key-encryption-keys.ts'

// An owner's key as the database stores it: wrapped, beside the pseudonym it is bound to.
export type StoredKey = { pseudonym: string; wrapped: Uint8Array }

// An owner's key as the service uses it.
export type OwnerKey = { pseudonym: string; raw: Uint8Array }

// The service's keys: the key-encryption keys (the first wraps, all unwrap), and the owners' keys
// it has unwrapped, a bounded number, each kept only beside the wrapped bytes it came from. A key
// is opened from what the database holds now: once an erasure deleted it, no read finds it, so
// nothing opened is used past an erasure; `forget` also drops it from the process at once. It is
// not zeroed: a create or a read in flight may still hold the same bytes, and garbage under them
// would turn a sound answer into a 500.
export type Keyring = {
  keks: KeyEncryptionKeys
  open: (stored: StoredKey) => Uint8Array
  make: () => OwnerKey & { wrapped: Uint8Array }
  wrap: (key: OwnerKey) => Uint8Array
  forget: (pseudonym: string) => void
}

const DEFAULT_CAPACITY = 10_000

export function createKeyring(keks: KeyEncryptionKeys, { capacity = DEFAULT_CAPACITY } = {}): Keyring {
  const [first] = keks
  const opened = new Map<string, { wrapped: Uint8Array; raw: Uint8Array }>()

  const remember = (pseudonym: string, wrapped: Uint8Array, raw: Uint8Array) => {
    opened.delete(pseudonym)
    opened.set(pseudonym, { wrapped, raw })
    if (opened.size <= capacity) return
    const oldest = opened.keys().next()
    if (!oldest.done) forget(oldest.value)
  }

  const forget = (pseudonym: string) => {
    opened.delete(pseudonym)
  }

  const wrap = ({ pseudonym, raw }: OwnerKey) => {
    if (!first) throw new Error('no key-encryption key to wrap with')
    return wrapOwnerKey(raw, first, pseudonym)
  }

  return {
    keks,
    open: ({ pseudonym, wrapped }) => {
      const known = opened.get(pseudonym)
      if (known && Buffer.from(known.wrapped).equals(wrapped)) {
        remember(pseudonym, known.wrapped, known.raw)
        return known.raw
      }
      const raw = unwrapOwnerKey(wrapped, keks, pseudonym)
      if ('missing' in raw) {
        throw new Error(`no key-encryption key with id ${raw.missing} is configured (KEY_ENCRYPTION_KEYS)`)
      }
      remember(pseudonym, new Uint8Array(wrapped), raw)
      return raw
    },
    make: () => {
      const key = { pseudonym: newPseudonym(), raw: newOwnerKey() }
      const wrapped = wrap(key)
      remember(key.pseudonym, wrapped, key.raw)
      return { ...key, wrapped }
    },
    wrap,
    forget,
  }
}
