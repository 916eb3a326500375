import { treaty } from '@elysiajs/eden'
import type { App } from './start/app.ts'

/** The whole API's type, for Eden Treaty: `treaty<App>(url)` is a client checked against it. */
export type { App }

/** What a client needs besides the service's address. */
export type PlantStoreClientOptions = {
  /** A JWT whose `sub` is the caller; sent as `Authorization: Bearer <token>` on every request. */
  token?: string
}

/**
 * A typed client of a running Plant Store at `baseUrl` (such as `http://localhost:3000`): every
 * route, body, query and answer is typed from the schemas the server validates with, so a call
 * that no longer fits the API fails the caller's type check. Ids go as JSON numbers, so up to
 * 2^53; send larger ones as JSON text with `fetch`.
 */
export function createPlantStoreClient(baseUrl: string, { token }: PlantStoreClientOptions = {}) {
  return treaty<App>(baseUrl, token === undefined ? {} : { headers: { authorization: `Bearer ${token}` } })
}

/** The client `createPlantStoreClient` returns. */
export type PlantStoreClient = ReturnType<typeof createPlantStoreClient>
