import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { childEnvironment } from '../shared/run-as.ts'

// A folder this process is making (a data folder, a throwaway server's) must not outlive it when
// it dies first, however it dies (SIGKILL included), when no watchdog looks after the folder yet.
// A shell in a session of its own reads a pipe from this process: told `keep`, it leaves the
// folder; when the pipe closes without that, this process has ended and the folder goes. What
// this process had started there (initdb, a copy, a server stopping) may still write for a
// moment, so the removal is repeated until the folder stays gone, for at most a minute. It ignores
// SIGTERM, which a test runner sends every process of a test that ran past its timeout, as the
// watchdog does (supervisor.ts).
const GUARD = `
trap '' TERM
IFS= read -r word
[ "$word" = keep ] && exit 0
tries=0
while [ -e "$1" ] && [ "$tries" -lt 300 ]; do
  rm -rf -- "$1" 2>/dev/null
  [ -e "$1" ] && sleep 0.2
  tries=$((tries + 1))
done
`

export type FolderGuard = {
  // The folder is looked after elsewhere from now on (a watchdog), or already gone.
  release: () => void
}

export function guardFolder(folder: string): FolderGuard {
  const guard = spawn('/bin/sh', ['-c', GUARD, 'plant-store-guard', folder], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
    env: childEnvironment(),
  })
  // Not waited for by the event loop: a process that ends with the guard still set leaves the
  // pipe to close, which is the guard's signal.
  guard.unref()
  let released = false
  return {
    release: () => {
      if (released) return
      released = true
      guard.stdin?.end('keep\n')
    },
  }
}

// A new folder of mode 0700 under `parent`, named `prefix` and random characters as mkdtemp names
// one, guarded from before it exists: a folder made first and guarded next would outlive a process
// killed between the two.
export async function makeGuardedFolder(
  parent: string,
  prefix: string,
): Promise<{ folder: string; guard: FolderGuard }> {
  for (;;) {
    const folder = join(parent, `${prefix}${randomBytes(6).toString('base64url')}`)
    const guard = guardFolder(folder)
    try {
      await mkdir(folder, { mode: 0o700 })
      return { folder, guard }
    } catch (error) {
      guard.release()
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
  }
}
