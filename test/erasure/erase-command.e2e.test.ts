import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { postPlant } from '../support/plant-client.ts'
import { runCli } from '../support/server-process.ts'
import { type Service, startService } from '../support/service.ts'

// The same name in its two Unicode forms: é as one code point, and as e with a combining accent.
const NFC = 'Jos\u00e9'
const NFD = 'Jose\u0301'

// What `owners erase` says, as an operator runs it beside a service (PostgreSQL).
describe('owners erase, its answers', () => {
  let sql: postgres.Sql
  let server: Service
  const env = () => server.env
  const token = (subject: string) => server.tokenFor(subject)
  const lag = async () => {
    const text = await (await fetch(`${server.url}/metrics`)).text()
    return Number(/^plant_store_projection_lag_events (\S+)$/m.exec(text)?.[1])
  }

  beforeAll(async () => {
    server = await startService({ label: 'erase_command' })
    sql = postgres(server.env.DATABASE_URL ?? '', { max: 1, onnotice: () => {} })
    expect((await postPlant(server.url, await token(NFC), { id: 1, name: 'Fern' })).status).toBe(200)
  })
  afterAll(async () => {
    await sql.end()
    await server.stop()
  })

  test('an unknown subject, a typo and another Unicode form of a known one: 0, and "no such owner" beside it', async () => {
    // when
    const unknown = await runCli(['owners', 'erase', 'nobody'], env())
    const typo = await runCli(['owners', 'erase', 'Jsoé'], env())
    const otherForm = await runCli(['owners', 'erase', NFD], env())
    // then
    for (const [answer, subject] of [
      [unknown, 'nobody'],
      [typo, 'Jsoé'],
      [otherForm, NFD],
    ] as const) {
      expect(answer).toMatchObject({ exitCode: 0, stdout: '0\n' })
      expect(answer.stderr).toContain(`no such owner ${JSON.stringify(subject)}`)
    }
    expect(otherForm.stderr).toContain('its NFC/NFKC form names an owner')
    expect(unknown.stderr).not.toContain('form names an owner')
    // and the owner it resembles is untouched
    expect(await sql`select 1 from owner_keys where owner = ${NFC}`).toHaveLength(1)
  })

  test('a subject that looks like an option is erased after --', async () => {
    // given
    expect((await postPlant(server.url, await token('-dash'), { id: 1, name: 'Dashed fern' })).status).toBe(
      200,
    )
    // when
    const erased = await runCli(['owners', 'erase', '--', '-dash'], env())
    // then
    expect(erased).toMatchObject({ exitCode: 0, stdout: '1\n' })
    expect(await sql`select 1 from owner_keys where owner = '-dash'`).toHaveLength(0)
  })

  test("the projection's lag counts only events that make a row: after an erasure it is 0", async () => {
    // given: two plants, the second the head of the log
    const owner = await token('lagging-lu')
    expect((await postPlant(server.url, owner, { id: 1, name: 'Ivy' })).status).toBe(200)
    expect(await lag()).toBe(0)
    // when: the owner is erased (the head is now an OwnerErased, which makes no row)
    expect(await runCli(['owners', 'erase', 'lagging-lu'], env())).toMatchObject({
      exitCode: 0,
      stdout: '1\n',
    })
    // then
    expect(await lag()).toBe(0)
  })
})
