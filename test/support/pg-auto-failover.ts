import { chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import postgres from 'postgres'
import { freePort, stopOnExit } from './server-cleanup.ts'

// A pg_auto_failover formation made for a test: a monitor and two PostgreSQL nodes, each run by
// `pg_autoctl … --run` as the `postgres` user in a process group of its own, in a temporary folder.
// The monitor's health checks are tightened so that a dead primary is noticed in seconds.
export type Formation = {
  // What `pg_autoctl show uri` prints for the formation: both nodes, target_session_attrs=read-write.
  uri: string
  // The node that is the primary now, by name ('node_1', 'node_2').
  primary: () => Promise<string | undefined>
  // Each node's reported and assigned state and health, for a failure's message.
  describe: () => Promise<string>
  // Kills a node's pg_autoctl and its PostgreSQL at once (SIGKILL to its process group).
  kill: (node: string) => void
  stop: () => void
}

const BIN = '/usr/lib/postgresql/15/bin'
const RUN_AS = process.getuid?.() === 0 ? ['runuser', '-u', 'postgres', '--'] : []

export async function startFormation(): Promise<Formation> {
  const dir = mkdtempSync(join(tmpdir(), 'plant-store-autofailover-'))
  if (RUN_AS.length > 0) {
    const uid = Number(Bun.spawnSync(['id', '-u', 'postgres']).stdout.toString().trim())
    const gid = Number(Bun.spawnSync(['id', '-g', 'postgres']).stdout.toString().trim())
    chownSync(dir, uid, gid)
  }
  const env = {
    PATH: `${BIN}:${process.env.PATH ?? ''}`,
    HOME: dir,
    XDG_CONFIG_HOME: join(dir, 'config'),
    XDG_DATA_HOME: join(dir, 'data'),
    XDG_RUNTIME_DIR: join(dir, 'run'),
  }
  const groups = new Map<string, number>()
  const spawn = (name: string, args: string[]) => {
    const child = Bun.spawn([...RUN_AS, ...withEnv(env), 'pg_autoctl', ...args], {
      detached: true,
      stdin: 'ignore',
      stdout: Bun.file(join(dir, `${name}.out`)),
      stderr: Bun.file(join(dir, `${name}.err`)),
    })
    groups.set(name, child.pid)
  }
  const killGroup = (pid: number) => {
    try {
      process.kill(-pid, 'SIGKILL')
    } catch {}
  }
  const stop = stopOnExit(
    () => {
      // A postmaster killed before its children leaves some running with no parent (the monitor's
      // health-check worker did, and spun): each server's processes are taken down together.
      const servers = ['monitor', 'node_1', 'node_2'].flatMap((node) => serverProcesses(join(dir, node)))
      for (const pid of groups.values()) killGroup(pid)
      for (const pid of servers) {
        try {
          process.kill(pid, 'SIGKILL')
        } catch {}
      }
      rmSync(dir, { recursive: true, force: true })
    },
    `for g in $(cat ${join(dir, 'groups')} 2>/dev/null); do kill -9 -$g; done; rm -rf ${dir}`,
  )
  const saveGroups = () => Bun.write(join(dir, 'groups'), [...groups.values()].join(' '))
  try {
    const monitorPort = freePort()
    const initdb = (node: string) =>
      run([join(BIN, 'initdb'), '-D', join(dir, node), '-U', 'postgres', '--auth=trust', '--no-sync'])
    // initdb by pg_autoctl syncs every file: on a busy machine that alone took 40 s.
    initdb('monitor')
    spawn('monitor', common('monitor', dir, monitorPort, ['create', 'monitor']))
    await saveGroups()
    const monitorUrl = `postgres://postgres@127.0.0.1:${monitorPort}/pg_auto_failover`
    const monitor = postgres(monitorUrl, { max: 1, onnotice: () => {}, connect_timeout: 2 })
    await until('the monitor answers', async () => {
      const [row] =
        await monitor`select count(*)::int as n from pg_extension where extname = 'pgautofailover'`
      return row?.n === 1
    })
    for (const [setting, value] of Object.entries(MONITOR_TIMINGS)) {
      await monitor.unsafe(`alter system set pgautofailover.${setting} = ${value}`)
    }
    await monitor`select pg_reload_conf()`
    const monitorUri = `postgres://autoctl_node@127.0.0.1:${monitorPort}/pg_auto_failover?sslmode=disable`
    initdb('node_1')
    spawn('node_1', common('node_1', dir, freePort(), ['create', 'postgres', '--monitor', monitorUri]))
    await saveGroups()
    await until('node_1 is the primary', async () => (await states(monitor)).node_1 === 'single')
    spawn('node_2', common('node_2', dir, freePort(), ['create', 'postgres', '--monitor', monitorUri]))
    await saveGroups()
    await until('node_2 is a secondary', async () => {
      const now = await states(monitor)
      return now.node_1 === 'primary' && now.node_2 === 'secondary'
    })
    const uri = run([
      ...withEnv(env),
      'pg_autoctl',
      'show',
      'uri',
      '--formation',
      'default',
      '--pgdata',
      join(dir, 'monitor'),
    ])
      .trim()
      .split('\n')
      .at(-1)
      ?.trim()
    if (!uri?.startsWith('postgres://')) throw new Error(`pg_autoctl show uri printed ${uri}`)
    return {
      uri,
      // A dead primary's last report stays 'primary'; the monitor has assigned it another state.
      primary: async () => {
        const rows = await monitor`select nodename from pgautofailover.node
                                   where reportedstate = goalstate
                                     and reportedstate in ('single', 'wait_primary', 'primary')`.catch(
          () => [],
        )
        return rows[0]?.nodename as string | undefined
      },
      describe: async () =>
        JSON.stringify(
          await monitor`select nodename, reportedstate::text, goalstate::text, health, reportedlsn::text
                        from pgautofailover.node`.catch(String),
        ),
      kill: (node) => {
        const pid = groups.get(node)
        if (pid !== undefined) killGroup(pid)
      },
      stop: () => {
        void monitor.end({ timeout: 1 })
        stop()
      },
    }
  } catch (error) {
    const logs = ['monitor', 'node_1', 'node_2']
      .map((name) => {
        const result = Bun.spawnSync(['tail', '-n', '15', join(dir, `${name}.err`)])
        return `${name}: ${result.stdout.toString()}`
      })
      .join('\n')
    stop()
    throw new Error(`could not start a pg_auto_failover formation: ${String(error)}\n${logs}`)
  }
}

// Health checks every second, a node unhealthy after 5 s without an answer, and a dead primary
// not waited for past 5 s before the promotion (defaults: 5 s, 20 s and 30 s). Not tighter: on a
// busy machine a live secondary would fail its checks too, and the monitor never promotes one.
const MONITOR_TIMINGS = {
  health_check_period: 1000,
  health_check_timeout: 2000,
  health_check_max_retries: 1,
  health_check_retry_delay: 500,
  node_considered_unhealthy_timeout: 5000,
  primary_demote_timeout: 5000,
}

function common(name: string, dir: string, port: number, create: string[]): string[] {
  return [
    ...create,
    '--pgdata',
    join(dir, name),
    '--pgport',
    String(port),
    '--pgctl',
    join(BIN, 'pg_ctl'),
    '--hostname',
    '127.0.0.1',
    ...(name === 'monitor' ? [] : ['--name', name]),
    '--auth',
    'trust',
    '--no-ssl',
    '--run',
  ]
}

async function states(monitor: postgres.Sql): Promise<Record<string, string>> {
  const rows = await monitor`select nodename, reportedstate::text as state from pgautofailover.node`
  return Object.fromEntries(rows.map((row) => [row.nodename as string, row.state as string]))
}

// runuser keeps only part of the environment: the variables go on the command line.
function withEnv(env: Record<string, string>): string[] {
  return ['env', ...Object.entries(env).map(([key, value]) => `${key}=${value}`)]
}

function run(command: string[]): string {
  const result = Bun.spawnSync([...RUN_AS, ...command], { stdout: 'pipe', stderr: 'pipe' })
  if (result.exitCode !== 0) {
    throw new Error(`${command.join(' ')} failed (${result.exitCode}): ${result.stderr.toString()}`)
  }
  return result.stdout.toString()
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return
    await Bun.sleep(250)
  }
  throw new Error(`timed out waiting until ${what}`)
}

// A PostgreSQL data directory's postmaster and its children, while it runs.
function serverProcesses(dataDir: string): number[] {
  const file = join(dataDir, 'postmaster.pid')
  if (!existsSync(file)) return []
  const postmaster = Number(readFileSync(file, 'utf8').split('\n')[0])
  if (!Number.isInteger(postmaster) || postmaster <= 0) return []
  const children = Bun.spawnSync(['pgrep', '-P', String(postmaster)]).stdout.toString()
  return [postmaster, ...children.split('\n').filter(Boolean).map(Number)]
}
