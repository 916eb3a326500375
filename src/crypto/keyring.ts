import { Buffer } from 'node:buffer'
import { setInterval } from 'node:timers'
import { newOwnerKey, newPseudonym, unwrapOwnerKey, wrapOwnerKey } from './envelope.ts'
import type { KeyEncryptionKeys } from './key-encryption-keys.ts'

// An owner's key as the database stores it: wrapped, beside the pseudonym it is bound to.
export type StoredKey = { pseudonym: string; wrapped: Uint8Array }

// An owner's key as the service uses it.
export type OwnerKey = { pseudonym: string; raw: Uint8Array }

// The service's keys: the key-encryption keys (the first wraps, all unwrap), and the owners' keys
// it has unwrapped, each kept beside the wrapped bytes it came from, and each in one buffer that is
// overwritten with zeros when it goes (docs/keys.md): when `forget` is told the owner is erased or
// the key no longer live, when it has not been used for `idleMs` (an erasure seen by another
// instance stops its use here: so the key goes within that time of it, whoever saw it), or when
// more than `capacity` are kept (the least recently used). So a raw key `open` returns is for use
// at once, in the same synchronous run: never held across an `await`, where it may be zeros by
// the time the run resumes. A key that is not kept is opened again from its wrapped bytes.
export type Keyring = {
  keks: KeyEncryptionKeys
  open: (stored: StoredKey) => Uint8Array
  // A new owner's key, kept here; its raw key, as `open`'s, for use at once.
  make: () => OwnerKey & StoredKey
  wrap: (key: OwnerKey) => Uint8Array
  forget: (pseudonym: string) => void
}

const DEFAULT_CAPACITY = 10_000
// With a sweep every half of it, a key goes at most 0.6 s after its last use.
const DEFAULT_IDLE_MS = 400

export function createKeyring(
  keks: KeyEncryptionKeys,
  { capacity = DEFAULT_CAPACITY, idleMs = DEFAULT_IDLE_MS, clock = () => performance.now() } = {},
): Keyring {
  const [first] = keks
  const opened = new Map<string, { wrapped: Uint8Array; raw: Uint8Array; used: number }>()
  let sweeping: ReturnType<typeof setInterval> | undefined

  const forget = (pseudonym: string) => {
    const known = opened.get(pseudonym)
    if (!known) return
    known.raw.fill(0)
    opened.delete(pseudonym)
    if (opened.size === 0 && sweeping) {
      clearInterval(sweeping)
      sweeping = undefined
    }
  }

  // Map order is the order of last use: the idle are at the front.
  const sweep = () => {
    const idleSince = clock() - idleMs
    for (const [pseudonym, { used }] of opened) {
      if (used > idleSince) break
      forget(pseudonym)
    }
  }

  const remember = (pseudonym: string, wrapped: Uint8Array, raw: Uint8Array) => {
    opened.delete(pseudonym)
    opened.set(pseudonym, { wrapped, raw, used: clock() })
    if (opened.size > capacity) {
      const oldest = opened.keys().next()
      if (!oldest.done) forget(oldest.value)
    }
    if (!sweeping) {
      sweeping = setInterval(sweep, idleMs / 2)
      // The sweep keeps no process alive.
      sweeping.unref()
    }
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
        known.used = clock()
        opened.delete(pseudonym)
        opened.set(pseudonym, known)
        return known.raw
      }
      const raw = unwrapOwnerKey(wrapped, keks, pseudonym)
      if ('missing' in raw) {
        throw new Error(`no key-encryption key with id ${raw.missing} is configured (KEY_ENCRYPTION_KEYS)`)
      }
      forget(pseudonym)
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
