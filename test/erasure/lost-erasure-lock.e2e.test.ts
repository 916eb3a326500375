import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import type postgres from 'postgres'
import type { DatabaseHandle } from '../../src/database/database.ts'
import { createOwnedPlant, openCommandStore, startCommandStore } from '../support/command-store.ts'
import { type PgBouncer, startPgBouncer } from '../support/pgbouncer.ts'
import { startCli } from '../support/server-process.ts'
import type { ServiceStorage } from '../support/service.ts'

// An erasure whose lock (locks/maintenance-lock.ts) is lost during its first step: a real CLI
// process on PostgreSQL, the step held by a transaction that holds the owner's key row.
describe('an erasure that loses its lock (PostgreSQL)', () => {
  let storage: ServiceStorage
  let handle: DatabaseHandle
  let sql: postgres.Sql
  let bouncer: PgBouncer | undefined

  beforeEach(async () => {
    ;({ storage, sql } = await startCommandStore('lost_erasure_lock', 3))
    handle = openCommandStore(storage, 2)
    for (const id of [1, 2, 3]) await createOwnedPlant(handle, 'alice', id, `Alice ${id}`)
  })
  afterEach(async () => {
    await bouncer?.stop()
    bouncer = undefined
    await sql.end()
    await handle.close()
    await storage.stop()
  })

  for (const way of ['its backend ended', 'PgBouncer restarted'] as const)
    test(`given an erasure held in its first step, when its lock is lost (${way}), then it erases nothing, ends in one line, exit 1, and a rerun completes`, async () => {
      // given
      bouncer = way === 'PgBouncer restarted' ? await startPgBouncer() : undefined
      const env = bouncer
        ? { ...storage.env, DATABASE_URL: `${bouncer.through(String(storage.databaseUrl))}?prepare=false` }
        : storage.env
      const holder = await sql.reserve()
      await holder`begin`
      await holder`select 1 from owner_keys where owner = 'alice' for update`
      const erasure = startCli(['owners', 'erase', 'alice'], env)
      const deadline = Date.now() + 30_000
      while (
        (
          await sql`select 1 from pg_stat_activity where wait_event_type = 'Lock'
          and query like '%for update%' and datname = current_database()`
        ).length === 0
      ) {
        if (Date.now() > deadline) throw new Error('the erasure never waited in its first step')
        await Bun.sleep(20)
      }
      // when
      if (bouncer) await bouncer.restart()
      else
        await sql`select pg_terminate_backend(pid) from pg_locks where locktype = 'advisory'
          and classid = 1347638356 and objid = hashtext('erasure-or-rebuild')::oid and granted`
      const lost = Date.now()
      await holder`rollback`
      holder.release()
      const [stderr, exitCode] = await Promise.all([new Response(erasure.stderr).text(), erasure.exited])
      // then
      expect({ exitCode, lines: stderr.trim().split('\n').length }).toEqual({ exitCode: 1, lines: 1 })
      expect(stderr).toContain('the lock on the erasure was lost')
      expect(stderr).toContain('nothing was erased; run it again')
      expect(Date.now() - lost).toBeLessThan(30_000)
      expect([...(await sql`select erasing from owner_keys where owner = 'alice'`)]).toEqual([
        { erasing: false },
      ])
      expect((await sql`select count(*)::int as n from plants where owner = 'alice'`)[0]?.n).toBe(3)
      // and a rerun completes
      const rerun = startCli(['owners', 'erase', 'alice'], env)
      expect(await rerun.exited).toBe(0)
      expect(await new Response(rerun.stdout).text()).toBe('3\n')
    }, 90_000)
})
