import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, constants, fstatSync, readSync } from 'node:fs'
import process from 'node:process'
import { setTimeout as sleep } from 'node:timers/promises'
import { openOwnFile } from '../data-dir/own-file.ts'
import { Failure } from '../shared/errors.ts'
import { childEnvironment, ids, type OsUser } from '../shared/run-as.ts'
import type { Binaries } from './binaries.ts'
import { lastLines } from './cluster.ts'
import { readPostmasterFile } from './postmaster.ts'

// The watchdog: a shell, in a session of its own (so a terminal's Ctrl-C reaches only the
// service), starts the postmaster and reads its standard input, a pipe from the service, until
// it closes. The pipe closes when the service stops it, and also when the service dies however it
// dies (SIGKILL, a crash): either way the watchdog asks the postmaster for a fast shutdown, waits
// for it, removes what it was told to (a throwaway store's folder), and exits with the
// postmaster's status. When the postmaster ends first, the watchdog ends with it. (A shell gives a
// job it starts in the background /dev/null as its input: the pipe is handed on as descriptor 3.)
// It ignores SIGTERM: a test runner sends it to every process a test file started when one test
// runs past its timeout (`bun test`), and the test store's server serves the file's other tests
// and its afterAll; the pipe still ends it with its process.
const WATCHDOG = `
trap '' TERM
exec 3<&0
"$@" 3<&- &
postmaster=$!
{ cat <&3 >/dev/null; kill -INT "$postmaster" 2>/dev/null; } &
watcher=$!
exec 3<&-
wait "$postmaster"
status=$?
kill "$watcher" 2>/dev/null
[ -n "$REMOVE_AFTER" ] && rm -rf "$REMOVE_AFTER"
exit $status
`

const READY_WITHIN_MS = 60_000
const STOP_WITHIN_MS = 60_000

export type PostmasterOptions = {
  binaries: Binaries
  folder: string
  settings: string[]
  user: OsUser | undefined
  // PostgreSQL's own log: its starts, stops and crashes (settings.ts).
  logFile: string
  // A folder the watchdog removes once the postmaster has stopped.
  removeAfter?: string
}

export type Postmaster = {
  pid: number
  // Ends the server cleanly (fast shutdown) and resolves once it has exited.
  stop: () => Promise<void>
  // Resolves when the server exits, with the watchdog's exit code.
  exited: Promise<number | null>
}

// Starts PostgreSQL on `folder` and resolves once it accepts connections. The watchdog is not
// waited for by the event loop: a process that ends without stopping it (a test runner) leaves
// the pipe to close, which stops the server.
export async function launchPostmaster(options: PostmasterOptions): Promise<Postmaster> {
  const { binaries, folder, settings, user, logFile, removeAfter } = options
  const log = openLog(logFile)
  const startedAt = fstatSync(log).size
  let watchdog: ChildProcess
  try {
    watchdog = spawn(
      '/bin/sh',
      ['-c', WATCHDOG, 'plant-store-postgres', binaries.postgres, '-D', folder, ...settings],
      {
        ...ids(user),
        detached: true,
        stdio: ['pipe', log, log],
        env: childEnvironment({ REMOVE_AFTER: removeAfter ?? '' }),
      },
    )
  } catch (error) {
    closeSync(log)
    throw error
  }
  watchdog.unref()
  const exited = new Promise<number | null>((resolve) => watchdog.once('exit', (code) => resolve(code)))
  const pid = await untilReady(folder, exited, async () => lastLines(readFrom(log, startedAt)))
    .catch(async (error: unknown) => {
      watchdog.stdin?.end()
      await exited
      throw error
    })
    .finally(() => closeSync(log))
  return {
    pid,
    exited,
    stop: async () => {
      watchdog.stdin?.end()
      // An immediate shutdown when the fast one hangs; the next start recovers from the WAL.
      const late = setTimeout(() => process.kill(pid, 'SIGQUIT'), STOP_WITHIN_MS)
      await exited
      clearTimeout(late)
    },
  }
}

// The log is in a folder that the server's user may write in (it holds the server's data, or is
// the user's own): a link or a hard link put there in its place is not written through, and the
// lines read back are the file's that was opened, whatever is at its name since.
function openLog(logFile: string): number {
  return openOwnFile(logFile, constants.O_RDWR | constants.O_APPEND)
}

function readFrom(log: number, position: number): string {
  const length = Math.max(0, fstatSync(log).size - position)
  const bytes = Buffer.alloc(length)
  const read = readSync(log, bytes, 0, length, position)
  return bytes.subarray(0, read).toString()
}

async function untilReady(
  folder: string,
  exited: Promise<number | null>,
  reason: () => Promise<string>,
): Promise<number> {
  let ended = false
  void exited.then(() => {
    ended = true
  })
  for (const deadline = Date.now() + READY_WITHIN_MS; Date.now() < deadline; await sleep(10)) {
    if (ended) break
    const file = await readPostmasterFile(folder)
    if (file?.ready) return file.pid
  }
  throw new Failure(
    'EMBEDDED_UNAVAILABLE',
    `PostgreSQL did not start in ${folder}: ${(await reason()) || (ended ? 'it exited' : 'no answer within 60 s')}`,
  )
}
