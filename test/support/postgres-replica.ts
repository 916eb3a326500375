import { chownSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { freePort, shellQuote, stopOnExit } from './server-cleanup.ts'

// A PostgreSQL primary and a streaming (hot standby) replica of it, made in a temporary folder by
// PostgreSQL's own tools: initdb, pg_basebackup -R, and a pg_ctl server each on a free port.
export type PrimaryWithReplica = {
  primaryUrl: string
  replicaUrl: string
  // Replay on the replica: paused, it keeps receiving WAL but shows nothing new.
  pauseReplay: () => Promise<void>
  resumeReplay: () => Promise<void>
  stopReplica: () => Promise<void>
  startReplica: () => Promise<void>
  // Waits until the replica has replayed everything the primary has written so far.
  caughtUp: () => Promise<void>
  // The primary stopped as a crash (no shutdown checkpoint, clients cut off), and the replica made
  // the primary: what an HA manager does when the primary dies.
  crashPrimary: () => Promise<void>
  promoteReplica: () => Promise<void>
  stop: () => void
}

export type ReplicaOptions = {
  // The primary waits for the replica to confirm every commit (synchronous_standby_names).
  synchronous?: boolean
}

// PostgreSQL's server tools: TEST_POSTGRES_BIN, else the newest version Debian's packages installed.
const BIN = process.env.TEST_POSTGRES_BIN ?? newestPostgresBin()

function newestPostgresBin(): string {
  const versions = [...new Bun.Glob('*/bin/pg_basebackup').scanSync({ cwd: '/usr/lib/postgresql' })]
    .map((path) => path.split('/')[0] ?? '')
    .sort((a, b) => Number(b) - Number(a))
  return `/usr/lib/postgresql/${versions[0] ?? '15'}/bin`
}
const RUN_AS = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : []

function run(command: string, args: string[]): void {
  const result = Bun.spawnSync([...RUN_AS, join(BIN, command), ...args], { stdout: 'pipe', stderr: 'pipe' })
  if (result.exitCode !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} failed (${result.exitCode}): ${result.stderr.toString()}${result.stdout.toString()}`,
    )
  }
}

export async function startPrimaryWithReplica({
  synchronous = false,
}: ReplicaOptions = {}): Promise<PrimaryWithReplica> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-replica-'))
  if (RUN_AS.length > 0) {
    const ids = Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim()
    const gid = Bun.spawnSync(['id', '-g', 'postgres']).stdout.toString().trim()
    chownSync(dir, Number(ids), Number(gid))
  }
  const primaryDir = join(dir, 'primary')
  const replicaDir = join(dir, 'replica')
  const primaryPort = freePort()
  const replicaPort = freePort()
  const pgCtl = (dataDir: string, ...args: string[]) =>
    run('pg_ctl', ['-D', dataDir, '-l', `${dataDir}.log`, '-w', '-t', '30', ...args])
  const stopCommand = (dataDir: string) =>
    [...RUN_AS, join(BIN, 'pg_ctl'), '-D', dataDir, 'stop', '-m', 'immediate'].map(shellQuote).join(' ')
  const stop = stopOnExit(
    () => {
      for (const dataDir of [replicaDir, primaryDir]) {
        try {
          pgCtl(dataDir, 'stop', '-m', 'immediate')
        } catch {}
      }
      rmSync(dir, { recursive: true, force: true })
    },
    `${stopCommand(replicaDir)}; ${stopCommand(primaryDir)}; rm -rf ${shellQuote(dir)}`,
  )
  try {
    run('initdb', ['-D', primaryDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-sync'])
    await Bun.write(
      join(primaryDir, 'postgresql.auto.conf'),
      settings(primaryPort, dir, [
        'wal_level = replica',
        'max_wal_senders = 5',
        'fsync = off',
        ...(synchronous ? ["synchronous_standby_names = '*'", 'synchronous_commit = on'] : []),
      ]),
    )
    pgCtl(primaryDir, 'start')
    run('pg_basebackup', [
      '-h',
      dir,
      '-p',
      String(primaryPort),
      '-U',
      'postgres',
      '-D',
      replicaDir,
      '-R',
      '-X',
      'stream',
    ])
    // pg_basebackup -R wrote primary_conninfo into postgresql.auto.conf; the port comes after it.
    const autoConf = join(replicaDir, 'postgresql.auto.conf')
    // The primary's settings came along; the replica, once promoted, has no standby to wait for.
    const copied = (await Bun.file(autoConf).text()).replace(/^synchronous_standby_names.*$/m, '')
    await Bun.write(autoConf, `${copied}\nport = ${replicaPort}\n`)
    pgCtl(replicaDir, 'start')
  } catch (error) {
    stop()
    throw new Error(`could not start a PostgreSQL primary and replica: ${String(error)}`)
  }
  const primaryUrl = `postgres://postgres@127.0.0.1:${primaryPort}/postgres`
  const replicaUrl = `postgres://postgres@127.0.0.1:${replicaPort}/postgres`
  const onReplica = (statement: string) => query(replicaUrl, statement)
  return {
    primaryUrl,
    replicaUrl,
    pauseReplay: async () => {
      await onReplica('select pg_wal_replay_pause()')
      // Pausing takes effect at the next record; wait until replay says it has stopped.
      for (let tries = 0; tries < 200; tries++) {
        const [row] = await onReplica('select pg_get_wal_replay_pause_state() as state')
        if (row?.state === 'paused') return
        await Bun.sleep(10)
      }
      throw new Error('replay did not pause')
    },
    resumeReplay: async () => {
      await onReplica('select pg_wal_replay_resume()')
    },
    stopReplica: async () => pgCtl(replicaDir, 'stop', '-m', 'fast'),
    crashPrimary: async () => pgCtl(primaryDir, 'stop', '-m', 'immediate'),
    promoteReplica: async () => pgCtl(replicaDir, 'promote'),
    startReplica: async () => pgCtl(replicaDir, 'start'),
    caughtUp: async () => {
      const [row] = await query(primaryUrl, 'select pg_current_wal_lsn()::text as lsn')
      for (let tries = 0; tries < 1000; tries++) {
        const [replayed] = await onReplica(`select pg_last_wal_replay_lsn() >= '${row?.lsn}'::pg_lsn as done`)
        if (replayed?.done === true) return
        await Bun.sleep(10)
      }
      throw new Error('the replica did not catch up')
    },
    stop,
  }
}

function settings(port: number, socketDir: string, extra: string[]): string {
  return [
    `port = ${port}`,
    "listen_addresses = '127.0.0.1'",
    `unix_socket_directories = '${socketDir}'`,
    ...extra,
  ]
    .map((line) => `${line}\n`)
    .join('')
}

async function query(url: string, statement: string): Promise<Record<string, unknown>[]> {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 5 })
  try {
    return [...(await sql.unsafe(statement))]
  } finally {
    await sql.end()
  }
}
