// A bounded memory of tokens that passed verification, so that a caller's next requests skip the
// signature check. An entry is trusted only until the token's `exp`, and only while the key that
// verified it is still the one the key source hands out for that token (`isCurrent`): a rotated
// or refetched key set sends the token through full verification again. When full, the oldest
// entry makes room.
export type VerifiedToken<Key> = { subject: string; expiresAtMs: number; key: Key }

export type VerifiedTokens<Key> = {
  find: (token: string, isCurrent: (key: Key) => Promise<boolean>) => Promise<VerifiedToken<Key> | undefined>
  remember: (token: string, verified: VerifiedToken<Key>) => void
}

export function verifiedTokens<Key>({ maxEntries = 10_000, now = Date.now } = {}): VerifiedTokens<Key> {
  const entries = new Map<string, VerifiedToken<Key>>()
  return {
    find: async (token, isCurrent) => {
      const entry = entries.get(token)
      if (!entry) return undefined
      if (now() < entry.expiresAtMs && (await isCurrent(entry.key))) return entry
      entries.delete(token)
      return undefined
    },
    remember: (token, verified) => {
      if (maxEntries <= 0) return
      entries.delete(token)
      if (entries.size >= maxEntries) {
        const oldest = entries.keys().next().value
        if (oldest !== undefined) entries.delete(oldest)
      }
      entries.set(token, verified)
    },
  }
}
