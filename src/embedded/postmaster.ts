import { readFile, readlink, realpath, rm } from 'node:fs/promises'
import { basename, join } from 'node:path'
import process from 'node:process'
import { setTimeout as sleep } from 'node:timers/promises'
import { Failure } from '../shared/errors.ts'
import { runAs } from '../shared/run-as.ts'

// What PostgreSQL's postmaster.pid says about the server of a data folder: its first lines are
// the process id, the data folder, the start time, the port, the socket directory, the listen
// address, the shared memory key and the server's state (`ready` once it accepts connections).
export type PostmasterFile = { pid: number; socketDirectory: string; port: number; ready: boolean }

export async function readPostmasterFile(folder: string): Promise<PostmasterFile | undefined> {
  const text = await readFile(join(folder, 'postmaster.pid'), 'utf8').catch(() => undefined)
  const lines = text?.split('\n') ?? []
  const pid = Number(lines[0])
  if (!Number.isInteger(pid) || pid <= 0) return undefined
  return {
    pid,
    port: Number(lines[3]),
    socketDirectory: lines[4]?.trim() ?? '',
    ready: lines[7]?.trim() === 'ready',
  }
}

// The server of `folder` when one runs and accepts connections: the process the pid file names is
// alive and is a postmaster of this folder (a pid file may outlive its server, and the number be
// reused by any process since).
export async function runningPostmaster(folder: string): Promise<PostmasterFile | undefined> {
  const file = await readPostmasterFile(folder)
  return file && (await isPostmasterOf(file.pid, folder)) ? file : undefined
}

export async function isPostmasterOf(pid: number, folder: string): Promise<boolean> {
  if (!(await isAlive(pid))) return false
  const expected = await realpath(folder).catch(() => folder)
  if (process.platform === 'linux') {
    // A postmaster works in its data folder, and runs a binary named postgres.
    const [cwd, exe] = await Promise.all([
      readlink(`/proc/${pid}/cwd`).catch(() => ''),
      readlink(`/proc/${pid}/exe`).catch(() => ''),
    ])
    return cwd === expected && basename(exe.replace(/ \(deleted\)$/, '')) === 'postgres'
  }
  const { code, stdout } = await runAs(undefined, 'ps', ['-o', 'command=', '-p', String(pid)])
  const command = stdout.trim()
  return code === 0 && /(^|\/)postgres /.test(command) && command.includes(`-D ${expected} `)
}

// A process that has exited is no longer alive, even while it waits to be reaped: a postmaster
// whose watchdog died is its init's to reap, which some inits (a container's) do late.
async function isAlive(pid: number): Promise<boolean> {
  try {
    process.kill(pid, 0)
  } catch (error) {
    // Alive, but another user's: only root signals a server run as another user.
    if ((error as NodeJS.ErrnoException).code !== 'EPERM') return false
  }
  if (process.platform !== 'linux') return true
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '')
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z'
}

const FAST_SHUTDOWN_MS = 30_000
const IMMEDIATE_SHUTDOWN_MS = 10_000

// Before a start: a postmaster of `folder` still running was left by a service that died without
// stopping it (SIGKILL, a crash). It is stopped, not adopted: its watchdog, tied to the dead
// service, is stopping it already, and the service starts its own under a watchdog of its own. A
// fast shutdown (SIGINT) ends its sessions and writes a checkpoint; only if it takes too long does
// an immediate one (SIGQUIT) follow, which the next start recovers from the WAL: nothing committed
// is lost either way. A pid file that names anything else, or nothing (empty, garbage), is stale:
// the caller holds DATA_DIR's lock, so no other server of this folder is starting. It is removed
// (PostgreSQL would refuse to start while it names a live process, or holds no number), and the
// process it names is never signalled.
export async function stopLeftover(folder: string): Promise<'stopped' | 'none'> {
  const file = await readPostmasterFile(folder)
  if (!file || !(await isPostmasterOf(file.pid, folder))) {
    await rm(join(folder, 'postmaster.pid'), { force: true })
    return 'none'
  }
  if (await signalAndWait(file.pid, 'SIGINT', FAST_SHUTDOWN_MS)) return 'stopped'
  if (await signalAndWait(file.pid, 'SIGQUIT', IMMEDIATE_SHUTDOWN_MS)) return 'stopped'
  throw new Failure(
    'EMBEDDED_UNAVAILABLE',
    `the PostgreSQL server left running in ${folder} (process ${file.pid}) does not stop: stop it, then start again`,
  )
}

async function signalAndWait(pid: number, signal: NodeJS.Signals, waitMs: number): Promise<boolean> {
  try {
    process.kill(pid, signal)
  } catch (error) {
    // Another user's server, which only root may signal: not stopped by waiting.
    return (error as NodeJS.ErrnoException).code !== 'EPERM'
  }
  for (const deadline = Date.now() + waitMs; Date.now() < deadline; await sleep(20)) {
    if (!(await isAlive(pid))) return true
  }
  return !(await isAlive(pid))
}
