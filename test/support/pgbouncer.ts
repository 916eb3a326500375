import { chownSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Subprocess } from 'bun'

export type PgBouncer = {
  port: number
  // A URL through PgBouncer to the same database as `url`.
  through: (url: string) => string
  // What PgBouncer logged so far.
  log: () => string
  // Ends PgBouncer at once (every client and server connection with it) and starts it again on the
  // same port, as an operator's restart does.
  restart: () => Promise<void>
  stop: () => Promise<void>
}

// Debian's pgbouncer (.ci/run installs it); it refuses to run as root, so it runs as postgres then.
const BINARY = process.env.TEST_PGBOUNCER ?? '/usr/sbin/pgbouncer'

// PgBouncer in transaction mode on a free loopback port in front of the test PostgreSQL (trust
// auth, user postgres), with a config and auth file of its own in a temporary folder.
export async function startPgBouncer(upstream = { hostname: '127.0.0.1', port: 5432 }): Promise<PgBouncer> {
  const folder = mkdtempSync(join(tmpdir(), 'pgbouncer-'))
  const port = freePort()
  const logfile = join(folder, 'pgbouncer.log')
  writeFileSync(join(folder, 'userlist.txt'), '"postgres" ""\n')
  writeFileSync(
    join(folder, 'pgbouncer.ini'),
    [
      '[databases]',
      `* = host=${upstream.hostname} port=${upstream.port}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(folder, 'userlist.txt')}`,
      'pool_mode = transaction',
      // As operators run it: PgBouncer 1.18 refuses any other startup parameter it does not track.
      'ignore_startup_parameters = extra_float_digits',
      'max_client_conn = 1000',
      'default_pool_size = 20',
      `logfile = ${logfile}`,
      '',
    ].join('\n'),
  )
  const root = process.getuid?.() === 0
  if (root) {
    const { uid, gid } = postgresUser()
    for (const file of ['', 'userlist.txt', 'pgbouncer.ini']) chownSync(join(folder, file), uid, gid)
  }
  const spawn = (): Subprocess =>
    Bun.spawn([BINARY, ...(root ? ['-u', 'postgres'] : []), join(folder, 'pgbouncer.ini')], {
      stdin: 'ignore',
      stdout: 'ignore',
      stderr: 'pipe',
    })
  let child = spawn()
  const log = () => Bun.spawnSync(['cat', logfile]).stdout.toString()
  const stop = async () => {
    child.kill('SIGTERM')
    await child.exited
    rmSync(folder, { recursive: true, force: true })
  }
  await waitUntilListening(port, child).catch(async (error: unknown) => {
    const logged = log()
    await stop()
    throw new Error(`pgbouncer did not start: ${String(error)} ${logged}`)
  })
  return {
    port,
    through: (url) => {
      const proxied = new URL(url)
      proxied.hostname = '127.0.0.1'
      proxied.port = String(port)
      return proxied.toString()
    },
    log,
    restart: async () => {
      child.kill('SIGTERM')
      await child.exited
      child = spawn()
      await waitUntilListening(port, child)
    },
    stop,
  }
}

function freePort(): number {
  const probe = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data: () => {} } })
  const { port } = probe
  probe.stop(true)
  return port
}

function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(Bun.spawnSync(['id', flag, 'postgres']).stdout.toString().trim())
  return { uid: id('-u'), gid: id('-g') }
}

async function waitUntilListening(port: number, child: Subprocess): Promise<void> {
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`exited ${child.exitCode}`)
    const open = await Bun.connect({ hostname: '127.0.0.1', port, socket: { data: () => {} } }).then(
      (socket) => {
        socket.end()
        return true
      },
      () => false,
    )
    if (open) return
    await Bun.sleep(50)
  }
  throw new Error('not listening after 10 s')
}
