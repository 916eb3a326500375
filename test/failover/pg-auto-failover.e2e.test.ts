import { afterAll, beforeAll, expect, test } from 'bun:test'
import { eventually, startReplicaServer, tokenFor } from '../replicas/replica-client.ts'
import { type Formation, startFormation } from '../support/pg-auto-failover.ts'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import type { ServerProcess } from '../support/server-process.ts'

// Failover (docs/operating.md) with a real HA manager: pg_auto_failover's monitor promotes the secondary when the
// primary's node dies, and the service, started with the URL pg_autoctl hands out, follows it.
let formation: Formation
let server: ServerProcess | undefined

beforeAll(async () => {
  formation = await startFormation()
}, 150_000)
afterAll(async () => {
  formation?.stop()
  await server?.stop('SIGKILL')
}, 30_000)

test("the primary's node is killed: the monitor promotes the secondary and the service follows without a restart", async () => {
  // given the service on pg_autoctl's URL (no user in it: PGUSER, as for psql)
  expect(formation.uri).toContain('target_session_attrs=read-write')
  server = await startReplicaServer({ DATABASE_URL: formation.uri, PGUSER: 'postgres' })
  const baseUrl = server.url
  const token = await tokenFor('autofailover')
  const answers: { status: number; id: number; retryAfter: string | null }[] = []
  let running = true
  let nextId = 1
  const writer = async () => {
    while (running) {
      const id = nextId++
      const response = await postPlant(baseUrl, token, { id, name: `ha ${id}` })
      await response.arrayBuffer()
      answers.push({ status: response.status, id, retryAfter: response.headers.get('retry-after') })
      if (response.status !== 200) await Bun.sleep(200)
    }
  }
  const writers = Promise.all([writer(), writer()])
  try {
    await eventually(
      'creates are acknowledged',
      async () => answers.filter((a) => a.status === 200).length > 10,
    )
    const before = await formation.primary()
    expect(before).toBe('node_1')
    // when the primary's node dies (its keeper and PostgreSQL killed)
    formation.kill('node_1')
    const killedAt = answers.length
    // then the monitor promotes node_2, and creates answer 200 again, through the same service
    await eventually(
      'node_2 is the primary',
      async () => (await formation.primary()) === 'node_2',
      60_000,
    ).catch(async (error: unknown) => {
      throw new Error(`${String(error)}; the monitor says ${await formation.describe()}`)
    })
    const promotedAt = answers.length
    await eventually(
      'a create answers 200 after the promotion',
      async () => answers.slice(promotedAt).some((answer) => answer.status === 200),
      10_000,
    )
    expect(answers.slice(killedAt).some((answer) => answer.status === 503)).toBe(true)
    expect((await fetch(`${baseUrl}/ready`)).status).toBe(200)
  } finally {
    running = false
    await writers
  }
  // and every answer was 200 or 503 with Retry-After, and every acknowledged create is listed once
  expect(answers.filter((a) => a.status !== 200 && !(a.status === 503 && a.retryAfter !== null))).toEqual([])
  const listed = (await listEveryPlant(baseUrl, token)).map((plant) => plant.name)
  const acknowledged = answers.filter((a) => a.status === 200).map((a) => `ha ${a.id}`)
  expect(acknowledged.filter((name) => listed.filter((seen) => seen === name).length !== 1)).toEqual([])
}, 120_000)
