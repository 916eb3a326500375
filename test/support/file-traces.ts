import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'

// Where any of `needles` lies in the bytes of the files under `dir`, as the audit looked (`strings`
// and `grep` over a store's folder): "file: needle ×count" for each find; [] when none is left.
export function findInFiles(dir: string, needles: string[]): string[] {
  const found: string[] = []
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue
    const path = join(entry.parentPath, entry.name)
    let text: string
    try {
      text = readFileSync(path).toString('latin1')
    } catch {
      // Gone between the listing and the read: nothing of it is left.
      continue
    }
    for (const needle of needles) {
      const count = text.split(needle).length - 1
      if (count > 0) found.push(`${relative(dir, path)}: ${needle} ×${count}`)
    }
  }
  return found
}
