import { createRemoteJWKSet, customFetch, type FetchImplementation, type JWTVerifyGetKey } from 'jose'

export type RemoteKeySetSettings = {
  url: URL
  // The shortest wait between two fetches of the key set.
  cooldownMs: number
  cacheMaxAgeMs: number
  timeoutMs?: number
  now?: () => number
  fetch?: typeof fetch
}

// The identity provider's key set could not be had; the caller gets a 401 that says so.
export class KeySetUnavailable extends Error {
  override name = 'KeySetUnavailable'
}

// jose caches the key set, refetches it when a token names an unknown `kid`, and waits
// `cooldownMs` after a successful fetch before it fetches again. It does not wait after a failed
// fetch, so while the provider is down every request would try again: the fetch below refuses to
// go out more than once per cooldown, whatever the outcome of the last attempt.
export function createRemoteKeySet(settings: RemoteKeySetSettings): JWTVerifyGetKey {
  const { url, cooldownMs, cacheMaxAgeMs, timeoutMs = 5000, now = Date.now, fetch: send = fetch } = settings
  let lastAttemptAt = Number.NEGATIVE_INFINITY
  const rateLimitedFetch: FetchImplementation = async (resource, options) => {
    if (now() - lastAttemptAt < cooldownMs) {
      throw new KeySetUnavailable('the key set was fetched moments ago and cannot be refetched yet')
    }
    lastAttemptAt = now()
    let response: Response
    try {
      response = await send(resource, options)
    } catch (cause) {
      throw new KeySetUnavailable('the key set could not be fetched', { cause })
    }
    if (response.status !== 200) {
      await response.body?.cancel()
      throw new KeySetUnavailable(`the key set could not be fetched (HTTP ${response.status})`)
    }
    return response
  }
  return createRemoteJWKSet(url, {
    cooldownDuration: cooldownMs,
    cacheMaxAge: cacheMaxAgeMs,
    timeoutDuration: timeoutMs,
    [customFetch]: rateLimitedFetch,
  })
}
