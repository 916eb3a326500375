import { Buffer } from 'node:buffer'
import { closeSync, openSync, readFileSync, readSync } from 'node:fs'

// The memory of a live process, as another process on the machine can read it (root, or the same
// user with ptrace rights): where in it `needles` occur. Each mapping that can be read is read
// through /proc/<pid>/mem in chunks, overlapping by a needle's length so that none is cut.
const CHUNK = 4 * 1024 * 1024

export function countInProcessMemory(pid: number, needles: Uint8Array[]): number[] {
  const found = needles.map(() => 0)
  const longest = Math.max(...needles.map((needle) => needle.byteLength))
  const maps = readFileSync(`/proc/${pid}/maps`, 'utf8').trim().split('\n')
  const mem = openSync(`/proc/${pid}/mem`, 'r')
  const buffer = Buffer.alloc(CHUNK + longest)
  try {
    for (const line of maps) {
      const [range = '', perms = ''] = line.split(' ')
      // Mappings of devices (vvar) cannot be read; executable text holds no key.
      if (!perms.startsWith('r') || line.includes('[vvar') || line.includes('[vsyscall]')) continue
      const [start = 0, end = 0] = range.split('-').map((hex) => Number.parseInt(hex, 16))
      let carried = 0
      for (let at = start; at < end; at += CHUNK) {
        const length = Math.min(CHUNK, end - at)
        let read = 0
        try {
          read = readSync(mem, buffer, carried, length, at)
        } catch {
          break
        }
        const view = buffer.subarray(0, carried + read)
        for (const [index, needle] of needles.entries()) {
          for (let hit = view.indexOf(needle); hit >= 0; hit = view.indexOf(needle, hit + 1)) {
            // A hit wholly inside the carried tail was counted in the chunk before.
            if (hit + needle.byteLength > carried) found[index] = (found[index] ?? 0) + 1
          }
        }
        carried = Math.min(longest - 1, view.length)
        buffer.copy(buffer, 0, view.length - carried, view.length)
        if (read < length) break
      }
    }
  } finally {
    closeSync(mem)
  }
  return found
}
