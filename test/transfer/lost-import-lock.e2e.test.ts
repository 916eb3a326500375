import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import type { FileSink, Subprocess } from 'bun'
import type postgres from 'postgres'
import { countRows, startCommandStore, until } from '../support/command-store.ts'
import { type PgBouncer, startPgBouncer } from '../support/pgbouncer.ts'
import { plainEnv, runCli } from '../support/server-process.ts'
import type { ServiceStorage } from '../support/service.ts'
import { withTestKeys } from '../support/test-keys.ts'
import { plainLine } from './sealed-lines.ts'

const ROOT = new URL('../..', import.meta.url).pathname

// An `events import --append` whose staging table's lock is lost while it runs: a real CLI
// process on PostgreSQL, waiting for the rest of its input with Alice's plants staged in the clear.
describe('an events import that loses its lock (PostgreSQL)', () => {
  let storage: ServiceStorage
  let sql: postgres.Sql
  let bouncer: PgBouncer | undefined
  const children: Subprocess[] = []
  const count = (where: string) => countRows(sql, where)
  const stagingTables = async () =>
    (
      await sql<{ name: string }[]>`select relname as name from pg_class where relkind = 'r'
      and relname like 'import\\_staging\\_%'`
    ).map((row) => row.name)

  beforeEach(async () => {
    ;({ storage, sql } = await startCommandStore('lost_import_lock', 2))
  })
  afterEach(async () => {
    for (const child of children.splice(0)) {
      child.kill('SIGKILL')
      await child.exited
    }
    await bouncer?.stop()
    bouncer = undefined
    await sql.end()
    await storage.stop()
  })

  for (const way of ['its backend ended', 'PgBouncer restarted'] as const)
    test(`given an import with Alice staged, when its lock is lost (${way}) and Alice erased, then it imports nothing, ends in one line, exit 1, and a rerun completes`, async () => {
      // given
      bouncer = way === 'PgBouncer restarted' ? await startPgBouncer() : undefined
      const env = bouncer
        ? { ...storage.env, DATABASE_URL: `${bouncer.through(String(storage.databaseUrl))}?prepare=false` }
        : storage.env
      const importing = Bun.spawn(['bun', 'src/cli/command-line.ts', 'events', 'import', '--append'], {
        cwd: ROOT,
        env: withTestKeys(plainEnv(env)),
        stdin: 'pipe',
        stdout: 'pipe',
        stderr: 'pipe',
      })
      children.push(importing)
      const stdin = importing.stdin as FileSink
      for (let id = 1; id <= 600; id++)
        stdin.write(`${plainLine('alice', { id: String(id), name: `Alice ${id}`, position: String(id) })}\n`)
      await stdin.flush()
      await until('the import stages its lines', async () => {
        const [table] = await stagingTables()
        return table !== undefined && (await sql`select 1 from ${sql(table)}`).length >= 500
      })
      // when
      if (bouncer) await bouncer.restart()
      else
        await sql`select pg_terminate_backend(l.pid) from pg_locks l join pg_class c
      on l.objid = hashtext(c.relname)::oid where l.locktype = 'advisory' and l.classid = 1347638356
      and c.relname like 'import\\_staging\\_%' and l.granted`
      const erased = await runCli(['owners', 'erase', 'alice'], env)
      for (let id = 601; id <= 1200; id++)
        stdin.write(`${plainLine('alice', { id: String(id), name: `Alice ${id}`, position: String(id) })}\n`)
      await stdin.end()
      const ending = Date.now()
      const [stderr, exitCode] = await Promise.all([new Response(importing.stderr).text(), importing.exited])
      // then
      expect(erased.exitCode).toBe(0)
      expect({ exitCode, lines: stderr.trim().split('\n').length }).toEqual({ exitCode: 1, lines: 1 })
      expect(stderr).toContain('the lock on the work table import_staging_')
      expect(stderr).toContain('was lost (its connection closed): nothing was imported; run it again')
      expect(Date.now() - ending).toBeLessThan(30_000)
      expect(await count(`plants where owner = 'alice'`)).toBe(0)
      expect(await count('events')).toBe(0)
      expect(await stagingTables()).toEqual([])
      // and a rerun completes
      const rerun = await runCli(['events', 'import', '--append'], env, `${plainLine('bob')}\n`)
      expect(rerun).toMatchObject({ exitCode: 0 })
      expect(await count(`plants where owner = 'bob'`)).toBe(1)
    }, 90_000)
})
