import { afterEach, beforeEach, describe, expect, test } from 'bun:test'
import type { Subprocess } from 'bun'
import type postgres from 'postgres'
import type { DatabaseHandle } from '../../src/database/database.ts'
import {
  countRows,
  createOwnedPlant,
  openCommandStore,
  startCommandStore,
  until,
} from '../support/command-store.ts'
import { type PgBouncer, startPgBouncer } from '../support/pgbouncer.ts'
import { plainEnv, runCli } from '../support/server-process.ts'
import type { ServiceStorage } from '../support/service.ts'
import { withTestKeys } from '../support/test-keys.ts'

const ROOT = new URL('../..', import.meta.url).pathname
// The rebuild's lock (locks/maintenance-lock.ts) as pg_locks shows it.
const REBUILD_LOCK = `locktype = 'advisory' and classid = 1347638356 and objid = hashtext('erasure-or-rebuild')::oid`

// A projection rebuild whose lock is lost while it runs (its backend ended, its pooler restarted):
// real CLI processes on PostgreSQL, the rebuild held at its swap by a transaction that reads `plants`.
describe('a projection rebuild that loses its lock (PostgreSQL)', () => {
  let storage: ServiceStorage
  let handle: DatabaseHandle
  let sql: postgres.Sql
  let bouncer: PgBouncer | undefined
  const children: Subprocess[] = []
  const spawnCli = (args: string[], env: Record<string, string>) => {
    const child = Bun.spawn(['bun', 'src/cli/command-line.ts', ...args], {
      cwd: ROOT,
      env: withTestKeys(plainEnv(env)),
      stdout: 'pipe',
      stderr: 'pipe',
    })
    children.push(child)
    return child
  }
  const count = (where: string) => countRows(sql, where)
  // A rebuild held at its swap: a transaction that reads `plants` keeps its DROP waiting.
  const holdSwap = async () => {
    const reader = await sql.reserve()
    await reader`begin`
    await reader`select count(*) from plants`
    return async () => {
      await reader`rollback`
      reader.release()
    }
  }
  const swapWaits = async () =>
    (
      await sql`select 1 from pg_locks where relation = 'plants'::regclass and not granted
        and database = (select oid from pg_database where datname = current_database())`
    ).length > 0
  // The rebuild, once its table holds Alice's plants and its swap waits.
  const heldRebuild = async (env: Record<string, string>) => {
    const rebuild = spawnCli(['projection', 'rebuild'], env)
    await until('the rebuild waits at its swap', swapWaits)
    return rebuild
  }
  const ended = async (child: ReturnType<typeof spawnCli>, since: number) => {
    const [stderr, exitCode] = await Promise.all([new Response(child.stderr).text(), child.exited])
    return { stderr, exitCode, seconds: (Date.now() - since) / 1000 }
  }

  beforeEach(async () => {
    ;({ storage, sql } = await startCommandStore('lost_rebuild_lock', 4))
    handle = openCommandStore(storage, 4)
    for (const owner of ['alice', 'bob'])
      for (const id of [1, 2, 3]) await createOwnedPlant(handle, owner, id, `${owner} ${id}`)
  })
  afterEach(async () => {
    for (const child of children.splice(0)) {
      child.kill('SIGKILL')
      await child.exited
    }
    await sql.end()
    await handle.close()
    await bouncer?.stop()
    bouncer = undefined
    await storage.stop()
  })

  test('given a rebuild held at its swap, when its lock backend is ended and Alice erased, then it swaps nothing, says so in one line, and no row of hers comes back', async () => {
    // given
    const release = await holdSwap()
    const rebuild = await heldRebuild(storage.env)
    // when
    await sql.unsafe(`select pg_terminate_backend(pid) from pg_locks where ${REBUILD_LOCK} and granted`)
    const killed = Date.now()
    const erased = await runCli(['owners', 'erase', 'alice'], storage.env)
    await release()
    const { stderr, exitCode, seconds } = await ended(rebuild, killed)
    // then
    expect(erased).toMatchObject({ exitCode: 0, stdout: '3\n' })
    expect({ exitCode, lines: stderr.trim().split('\n').length }).toEqual({ exitCode: 1, lines: 1 })
    expect(stderr).toContain('the lock on the projection rebuild was lost')
    expect(stderr).toContain('nothing was swapped; run it again')
    expect(seconds).toBeLessThan(30)
    expect(await count(`plants where owner = 'alice'`)).toBe(0)
    expect(await count(`plants where owner = 'bob'`)).toBe(3)
    // and a rerun completes, clearing what the lost one left
    expect(await runCli(['projection', 'rebuild'], storage.env)).toMatchObject({ exitCode: 0 })
    expect(await runCli(['projection', 'verify'], storage.env)).toMatchObject({ exitCode: 0 })
    expect(await count(`plants where owner = 'alice'`)).toBe(0)
    expect(await count(`pg_class where relname like 'plants_rebuild_%'`)).toBe(0)
  }, 90_000)

  test('given a rebuild through PgBouncer held at its swap, when PgBouncer restarts and Alice is erased, then it ends within 30 s in one line, exit 1, and no row of hers comes back', async () => {
    // given
    bouncer = await startPgBouncer()
    const pooled = {
      ...storage.env,
      DATABASE_URL: `${bouncer.through(String(storage.databaseUrl))}?prepare=false`,
    }
    const release = await holdSwap()
    const rebuild = await heldRebuild(pooled)
    // when
    await bouncer.restart()
    const restarted = Date.now()
    const erased = await runCli(['owners', 'erase', 'alice'], pooled)
    await release()
    const { stderr, exitCode, seconds } = await ended(rebuild, restarted)
    // then
    expect(erased).toMatchObject({ exitCode: 0, stdout: '3\n' })
    expect({ exitCode, lines: stderr.trim().split('\n').length }).toEqual({ exitCode: 1, lines: 1 })
    expect(stderr).toContain('nothing was swapped')
    expect(stderr).not.toContain('TypeError')
    expect(seconds).toBeLessThan(30)
    expect(await count(`plants where owner = 'alice'`)).toBe(0)
    // and a rerun completes
    expect(await runCli(['projection', 'rebuild'], pooled)).toMatchObject({ exitCode: 0 })
    expect(await runCli(['projection', 'verify'], pooled)).toMatchObject({ exitCode: 0 })
    expect(await count(`plants where owner = 'alice'`)).toBe(0)
  }, 90_000)

  test('given a rebuild held at its swap for long, when Alice is erased, then the erasure says it waits, waits past the statement timeout, and completes once the rebuild ends', async () => {
    // given: requests time out after 2 s
    const env = { ...storage.env, DATABASE_STATEMENT_TIMEOUT_MS: '2000' }
    const release = await holdSwap()
    const rebuild = await heldRebuild(env)
    // when
    const erasure = spawnCli(['owners', 'erase', 'alice'], env)
    const stderr = new Response(erasure.stderr).text()
    await Bun.sleep(5000)
    // then: still waiting
    expect(erasure.exitCode).toBeNull()
    await release()
    expect(await rebuild.exited).toBe(0)
    expect(await erasure.exited).toBe(0)
    expect(await new Response(erasure.stdout).text()).toBe('3\n')
    expect(await stderr).toContain('a projection rebuild is running: the erasure waits for it to finish')
    expect(await count(`plants where owner = 'alice'`)).toBe(0)
  }, 90_000)

  test('given a rebuild running, when Alice is erased with --no-wait, then it fails at once, in one line, and erases nothing', async () => {
    // given
    const release = await holdSwap()
    await heldRebuild(storage.env)
    // when
    const started = Date.now()
    const erased = await runCli(['owners', 'erase', 'alice', '--no-wait'], storage.env)
    // then
    expect(erased.exitCode).toBe(1)
    expect(erased.stderr.trim().split('\n')).toHaveLength(1)
    expect(erased.stderr).toContain('a projection rebuild is running')
    expect(Date.now() - started).toBeLessThan(15_000)
    expect(await count(`owner_keys where owner = 'alice' and erasing`)).toBe(0)
    await release()
  }, 90_000)
})
