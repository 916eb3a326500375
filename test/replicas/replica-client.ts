import { afterAll, beforeAll } from 'bun:test'
import { issueToken } from '../../src/auth/issue-token.ts'
import { postPlant, tokenHeader } from '../support/plant-client.ts'
import { stopOnExit } from '../support/server-cleanup.ts'
import { type Env, type ServerProcess, startServer } from '../support/server-process.ts'
import { type ReplicatedService, startService } from '../support/service.ts'

// What the read-replica tests share: a server on a primary and its replicas, and its answers.
export const SECRET = 'read-replica-secret-of-at-least-32-bytes'

export const tokenFor = (subject: string) =>
  issueToken(new TextEncoder().encode(SECRET), { subject, ttlSeconds: 3600, now: new Date() })

// A service reading from a streaming replica of its primary, for the tests of one end-to-end file:
// started before them and handed to `started`, stopped after them.
export function withReplicatedService(
  readWaitMs: number,
  started: (service: ReplicatedService) => void,
): void {
  let service: ReplicatedService | undefined
  beforeAll(async () => {
    service = await startService({
      label: 'replicas',
      replicas: true,
      secret: SECRET,
      env: { DATABASE_POOL_SIZE: '4', READ_WAIT_MS: String(readWaitMs) },
    })
    started(service)
  }, 60_000)
  afterAll(async () => {
    await service?.stop()
  }, 30_000)
}

// The server, killed with the test process if afterAll never runs.
export async function startReplicaServer(env: Env): Promise<ServerProcess> {
  const server = await startServer({ AUTH_JWT_SECRET: SECRET, DATABASE_POOL_SIZE: '4', ...env })
  void server.process.stderr.pipeTo(new WritableStream()).catch(() => {})
  const kill = stopOnExit(() => server.process.kill('SIGKILL'), `kill -9 ${server.process.pid}`)
  return {
    ...server,
    stop: async (signal) => {
      const code = await server.stop(signal)
      kill()
      return code
    },
  }
}

// Creates a plant; answers the position the create returned.
export async function create(baseUrl: string, token: string, id: number, name = `plant ${id}`) {
  const response = await postPlant(baseUrl, token, { id, name })
  if (response.status !== 200) throw new Error(`POST answered ${response.status}: ${await response.text()}`)
  const position = response.headers.get('plant-store-position')
  if (position === null || !/^[1-9][0-9]*$/.test(position)) {
    throw new Error(`POST answered the position ${position}`)
  }
  return BigInt(position)
}

export async function list(baseUrl: string, token: string, position?: bigint | string, query = '') {
  const headers: Record<string, string> = tokenHeader(token)
  if (position !== undefined) headers['plant-store-position'] = String(position)
  const response = await fetch(`${baseUrl}/plants${query}`, { headers })
  const body = (await response.json()) as unknown
  return { status: response.status, body, names: Array.isArray(body) ? body.map((plant) => plant.name) : [] }
}

// A metric's value in the server's /metrics, summed over the series whose labels include `labels`.
export async function metric(baseUrl: string, name: string, labels: Record<string, string> = {}) {
  const text = await (await fetch(`${baseUrl}/metrics`)).text()
  // A metric the server no longer exposes fails the test; a labelled series not yet counted is 0.
  // A histogram's series (_sum, _count, _bucket) are declared under the histogram's own name.
  const declared = name.replace(/_(sum|count|bucket)$/, '')
  if (!text.includes(`# TYPE ${name} `) && !text.includes(`# TYPE ${declared} histogram`))
    throw new Error(`${name} is missing from /metrics`)
  let total = 0
  for (const line of text.split('\n')) {
    const match = /^([a-z_]+)(\{[^}]*\})? (\S+)$/.exec(line)
    if (!match || match[1] !== name) continue
    const seriesLabels = match[2] ?? ''
    if (Object.entries(labels).every(([key, value]) => seriesLabels.includes(`${key}="${value}"`))) {
      total += Number(match[3])
    }
  }
  return total
}

export async function readsFrom(baseUrl: string) {
  return {
    primary: await metric(baseUrl, 'plant_store_reads_total', { source: 'primary' }),
    all: await metric(baseUrl, 'plant_store_reads_total'),
  }
}

// Polls until `check` holds, or fails naming what it waited for.
export async function eventually(what: string, check: () => Promise<boolean>, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return
    await Bun.sleep(50)
  }
  throw new Error(`timed out waiting until ${what}`)
}
