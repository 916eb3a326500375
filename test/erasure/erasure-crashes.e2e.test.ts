import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import type { Subprocess } from 'bun'
import type postgres from 'postgres'
import type { DatabaseHandle } from '../../src/database/database.ts'
import { createOwnedPlant, openCommandStore, startCommandStore, until } from '../support/command-store.ts'
import { runCli, startCli } from '../support/server-process.ts'
import type { ServiceStorage } from '../support/service.ts'
import { plainLine } from '../transfer/sealed-lines.ts'
import { findTraces } from './traces.ts'

const CAROL = ['CarolName1', 'CarolName2', 'CarolName3']

// Erasure (docs/erasure.md) when commands die: real CLI processes on PostgreSQL, SIGKILLed at a chosen step.
// Each is held at that step by a lock the test takes, so that the kill lands there every time.
describe('owners erase and commands killed half-way (PostgreSQL)', () => {
  let storage: ServiceStorage
  let handle: DatabaseHandle
  let sql: postgres.Sql
  const children: Subprocess[] = []
  const env = () => storage.env
  const spawnCli = (args: string[], stdin: 'ignore' | 'pipe' = 'ignore') => {
    const child = stdin === 'pipe' ? startCli(args, env(), { pipe: true }) : startCli(args, env())
    children.push(child)
    return child
  }
  const kill = async (child: Subprocess) => {
    child.kill('SIGKILL')
    await child.exited
  }
  const create = (owner: string, id: number, name: string) => createOwnedPlant(handle, owner, id, name)
  const workTables = async (prefix: string) =>
    (
      await sql<{ name: string }[]>`select relname as name from pg_class
        where relkind = 'r' and relname like ${`${prefix}%`}`
    ).map((row) => row.name)
  // Whether a statement waits for a lock on `table`.
  const waitsOn = async (table: string) =>
    (
      await sql`select 1 from pg_locks where relation = ${table}::regclass and not granted
        and database = (select oid from pg_database where datname = current_database())`
    ).length > 0
  const carolKey = () => sql`select erasing from owner_keys where owner = 'carol'`.then((rows) => [...rows])

  beforeEach(async () => {
    // The commands alone: no server runs beside them.
    ;({ storage, sql } = await startCommandStore('erasure_crashes', 4))
    handle = openCommandStore(storage, 4)
    for (const [index, name] of CAROL.entries()) {
      await create('carol', index + 1, name)
      await create('bob', index + 1, `Bob ${index}`)
    }
  })
  afterEach(async () => {
    for (const child of children.splice(0)) await kill(child)
    await sql.end()
    await handle.close()
    await storage.stop()
  })

  test('an import and a rebuild killed after filling their tables: the erasure drops them, and nothing of the owner is left', async () => {
    // given: an import of a plaintext export, 500 of Carol's lines staged, waiting for the rest of
    // its input
    const importing = spawnCli(['events', 'import', '--append'], 'pipe')
    const stdin = importing.stdin as import('bun').FileSink
    for (let id = 100; id < 700; id++)
      stdin.write(
        `${plainLine('carol', { id: String(id), name: `CarolImported${id}`, position: String(id) })}\n`,
      )
    await stdin.flush()
    await until('the import stages its lines', async () => {
      const [table] = await workTables('import_staging_')
      return table !== undefined && (await sql`select 1 from ${sql(table)}`).length >= 500
    })
    // and a rebuild beside it, held at its swap (the events table locked) once its table holds Carol
    const lock = await sql.reserve()
    await lock`begin`
    await lock`lock table events in share mode`
    const rebuild = spawnCli(['projection', 'rebuild'])
    await until('the rebuild fills its table', async () => {
      const [table] = await workTables('plants_rebuild_')
      if (table === undefined) return false
      return (await sql`select 1 from ${sql(table)} where owner = 'carol'`).length === CAROL.length
    })
    // when both are killed there, and Carol erased
    await kill(importing)
    await kill(rebuild)
    await lock`rollback`
    lock.release()
    expect(await findTraces(handle.db, ['CarolName1', 'CarolImported100'])).toHaveLength(3)
    const erased = await runCli(['owners', 'erase', 'carol'], env())
    // then
    expect(erased).toMatchObject({ exitCode: 0, stdout: '3\n' })
    expect(await workTables('plants_rebuild_')).toEqual([])
    expect(await workTables('import_staging_')).toEqual([])
    expect(await findTraces(handle.db, ['carol', ...CAROL, 'CarolImported'])).toEqual([])
  }, 90_000)

  test('killed before the key was deleted: the rerun completes the erasure and prints the plants the owner had', async () => {
    // given: the erasure held at step 4 (the record of erased pseudonyms locked), killed there
    const held = await sql.reserve()
    await held`begin`
    await held`lock table erased_owners in share mode`
    const first = spawnCli(['owners', 'erase', 'carol'])
    await until('the erasure waits at step 4', () => waitsOn('erased_owners'))
    await kill(first)
    await held`rollback`
    held.release()
    expect(await carolKey()).toEqual([{ erasing: true }])
    // when
    const rerun = await runCli(['owners', 'erase', 'carol'], env())
    // then
    expect(rerun).toMatchObject({ exitCode: 0, stdout: '3\n' })
    expect(rerun.stderr).not.toContain('no such owner')
    expect(await carolKey()).toEqual([])
  }, 60_000)

  test('killed between deleting the key and refreshing the statistics: the rerun refreshes them', async () => {
    // given: statistics that hold Carol, and the erasure held at its ANALYZE, killed there
    await sql`analyze plants, owner_keys`
    expect(await findTraces(handle.db, ['carol'])).toContain('pg_stats: carol')
    const held = await sql.reserve()
    await held`begin`
    await held`lock table plants in share update exclusive mode`
    const first = spawnCli(['owners', 'erase', 'carol'])
    await until('the erasure waits at its ANALYZE', () => waitsOn('plants'))
    expect(await carolKey()).toEqual([])
    await kill(first)
    await held`rollback`
    held.release()
    expect(await findTraces(handle.db, ['carol'])).toContain('pg_stats: carol')
    // when
    const rerun = await runCli(['owners', 'erase', 'carol'], env())
    // then: the owner is erased already, so 0, and the statistics no longer hold them
    expect(rerun).toMatchObject({ exitCode: 0, stdout: '0\n' })
    expect(await findTraces(handle.db, ['carol', ...CAROL])).toEqual([])
  }, 60_000)

  test('an erasure that waits behind a rebuild says so on stderr, then completes', async () => {
    // given: a rebuild held at its swap
    const held = await sql.reserve()
    await held`begin`
    await held`lock table events in share mode`
    const rebuild = spawnCli(['projection', 'rebuild'])
    await until('the rebuild runs', async () => (await workTables('plants_rebuild_')).length > 0)
    // when
    const erasing = spawnCli(['owners', 'erase', 'carol'])
    const reader = (erasing.stderr as ReadableStream<Uint8Array>).getReader()
    const said = new TextDecoder().decode((await reader.read()).value)
    // then
    expect(said).toContain('a projection rebuild is running: the erasure waits for it to finish')
    expect(await carolKey()).toEqual([{ erasing: false }])
    await held`rollback`
    held.release()
    expect(await rebuild.exited).toBe(0)
    expect(await erasing.exited).toBe(0)
    expect(await new Response(erasing.stdout as ReadableStream<Uint8Array>).text()).toBe('3\n')
    expect(await carolKey()).toEqual([])
  }, 60_000)
})
