import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import postgres from 'postgres'
import { createLegacyStore, type LegacyStore, loadLegacyLog } from '../keys/upgrade-legacy-store.ts'
import { runCli } from '../support/server-process.ts'
import { plainLine } from '../transfer/sealed-lines.ts'

const SECRET = 'plaintext-import-e2e-secret-of-32-bytes'

// The previous version's `events export` of a store it wrote: version 1, plaintext, one event a
// line, as PostgreSQL prints them (numbers keep every digit), positions and recorded times kept.
async function previousExport(sql: postgres.Sql): Promise<string[]> {
  const rows = await sql<{ line: string }[]>`
    select jsonb_build_object('position', position::text, 'streamId', stream_id, 'streamVersion', stream_version,
      'type', type, 'schemaVersion', schema_version, 'data', data, 'metadata', metadata,
      'recordedAt', to_char(recorded_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))::text as line
    from events order by position`
  return rows.map((row) => row.line)
}

// Erasure (docs/erasure.md) with a plaintext export: a store written by the version before erasure, upgraded by
// this one's first command, erases an owner; the export taken before must not bring them back.
describe('a plaintext (version 1) export appended after an erasure (PostgreSQL, the CLI)', () => {
  let legacy: LegacyStore
  let sql: postgres.Sql
  // Taken before this version first opens the store.
  let lines: string[]
  const env = () => {
    if (legacy.storage.kind !== 'postgres') throw new Error('a PostgreSQL store')
    return { DATABASE_URL: legacy.storage.url, AUTH_JWT_SECRET: SECRET }
  }
  const counts = async () => {
    const [row] = await sql<{ events: number; plants: number; keys: number }[]>`select
      (select count(*)::int from events) as events, (select count(*)::int from plants) as plants,
      (select count(*)::int from owner_keys) as keys`
    return row
  }

  beforeEach(async () => {
    legacy = await createLegacyStore('postgres', loadLegacyLog)
    sql = postgres(env().DATABASE_URL, { max: 1, onnotice: () => {} })
    lines = await previousExport(sql)
  })
  afterEach(async () => {
    await sql.end()
    await legacy.cleanup()
  })

  test('the export taken before the erasure is refused, naming its first line of the erased owner; nothing changes', async () => {
    // given: olivia erased (the first command upgrades the store)
    expect(await runCli(['owners', 'erase', 'olivia'], env())).toMatchObject({ exitCode: 0, stdout: '7\n' })
    const before = await counts()
    // when: the previous version's export of the store is appended
    const refused = await runCli(['events', 'import', '--append'], env(), `${lines.join('\n')}\n`)
    // then
    expect(refused.exitCode).toBe(1)
    expect(refused.stderr.trim()).toBe(
      "import refused, nothing was imported: line 1: this plaintext event is the target store's event at position 1 (recorded at the same time), whose owner the store has erased: its owner cannot come back",
    )
    expect(await counts()).toEqual(before)
    expect(await sql`select 1 from plants where owner = 'olivia'`).toHaveLength(0)
    // and the same holds for a file of olivia's lines alone, in any order
    const olivias = lines
      .filter((line) => (JSON.parse(line) as { metadata: { owner: string } }).metadata.owner === 'olivia')
      .reverse()
    const again = await runCli(['events', 'import', '--append'], env(), `${olivias.join('\n')}\n`)
    expect(again.exitCode).toBe(1)
    expect(again.stderr).toContain('whose owner the store has erased')
    expect(await counts()).toEqual(before)
  }, 60_000)

  test("where the store cannot tell: a plaintext export of another store's events brings the sub back, as a new owner", async () => {
    // given
    expect(await runCli(['owners', 'erase', 'olivia'], env())).toMatchObject({ exitCode: 0, stdout: '7\n' })
    // when: events the store never had (their position taken here by another event, at another time)
    const elsewhere = plainLine('olivia', { id: '42', name: 'From elsewhere', position: '1' })
    const imported = await runCli(['events', 'import', '--append'], env(), `${elsewhere}\n`)
    // then
    expect(imported.exitCode).toBe(0)
    expect([...(await sql`select name from plants where owner = 'olivia'`)]).toEqual([
      { name: 'From elsewhere' },
    ])
  }, 60_000)
})
