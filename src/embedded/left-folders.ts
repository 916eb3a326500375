import { lstat, readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import process from 'node:process'
import { type OsUser, removeHandedOver, runAs } from '../shared/run-as.ts'

// A folder this young may be one a live process has only begun to make: its guard (folder-guard.ts)
// is started before the folder, but may not yet show its command line.
const YOUNGEST_LEFT_MS = 10_000

// Throwaway servers' folders (`<prefix><random>` in `parent`) that no process works for any more:
// left when a test process died together with its server's watchdog (the whole process tree
// SIGKILLed, the out-of-memory killer, a container's processes killed at once), which nothing of
// theirs was left to remove. A folder is worked for while a process's command line names it: its
// guard's while it is made, its watchdog's and server's once the server runs. Only the folders of
// `user` (this process's own user when undefined) are looked at, real folders, not links.
export async function removeLeftFolders(parent: string, prefix: string, user: OsUser | undefined) {
  const names = (await readdir(parent).catch(() => [])).filter((name) => name.startsWith(prefix))
  if (names.length === 0) return
  const uid = user?.uid ?? process.getuid?.()
  const commands = await commandLines()
  for (const name of names) {
    const folder = join(parent, name)
    const stat = await lstat(folder).catch(() => undefined)
    if (!stat?.isDirectory() || stat.uid !== uid || Date.now() - stat.mtimeMs < YOUNGEST_LEFT_MS) continue
    if (commands.some((command) => command.includes(folder))) continue
    // Another process may be removing it too: what it took first is not this one's to report.
    await removeHandedOver(user, folder).catch(() => {})
  }
}

// Every process's command line: from /proc where there is one (Linux), else from ps (macOS).
async function commandLines(): Promise<string[]> {
  const pids = await readdir('/proc').catch(() => undefined)
  if (pids === undefined) {
    const { code, stdout } = await runAs(undefined, 'ps', ['-A', '-ww', '-o', 'args='])
    if (code !== 0) throw new Error('ps cannot list the processes')
    return stdout.split('\n')
  }
  const read = pids
    .filter((pid) => /^\d+$/.test(pid))
    .map((pid) => readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => ''))
  return (await Promise.all(read)).map((line) => line.replaceAll('\0', ' '))
}
