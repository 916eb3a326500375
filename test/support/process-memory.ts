import { Buffer } from 'node:buffer'
import { open, readFile } from 'node:fs/promises'

// The memory of a live process, as another process on the machine can read it (root, or the same
// user with ptrace rights): how often each of `needles` occurs in it. Each mapping that can be read
// is read through /proc/<pid>/mem in chunks, overlapping by a needle's length so that none is cut;
// the reads are asynchronous, so the caller's other work (requests keeping a key in use) goes on.
const CHUNK = 4 * 1024 * 1024

export async function countInProcessMemory(pid: number, needles: Uint8Array[]): Promise<number[]> {
  const found = needles.map(() => 0)
  const longest = Math.max(...needles.map((needle) => needle.byteLength))
  const maps = (await readFile(`/proc/${pid}/maps`, 'utf8')).trim().split('\n')
  const mem = await open(`/proc/${pid}/mem`, 'r')
  const buffer = Buffer.alloc(CHUNK + longest)
  try {
    for (const line of maps) {
      const [range = '', perms = ''] = line.split(' ')
      // Mappings of the kernel's (vvar, vsyscall) cannot be read.
      if (!perms.startsWith('r') || line.includes('[vvar') || line.includes('[vsyscall]')) continue
      const [start = 0, end = 0] = range.split('-').map((hex) => Number.parseInt(hex, 16))
      let carried = 0
      for (let at = start; at < end; at += CHUNK) {
        const length = Math.min(CHUNK, end - at)
        const read = await mem.read(buffer, carried, length, at).then(
          ({ bytesRead }) => bytesRead,
          () => -1,
        )
        if (read < 0) break
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
    await mem.close()
  }
  return found
}
