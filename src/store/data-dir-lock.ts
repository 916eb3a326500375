import { mkdir, open, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import process from 'node:process'

export class DataDirInUse extends Error {
  override name = 'DataDirInUse'
}

// An exclusive pid file. A stale one (its process is gone, e.g. after SIGKILL) is taken over.
export async function lockDataDir(dataDir: string): Promise<() => Promise<void>> {
  await mkdir(dataDir, { recursive: true })
  const path = join(dataDir, 'server.pid')
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const file = await open(path, 'wx', 0o600)
      await file.writeFile(String(process.pid))
      await file.close()
      return () => rm(path, { force: true })
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    }
    const holder = Number.parseInt(await readFile(path, 'utf8').catch(() => ''), 10)
    if (Number.isInteger(holder) && holder !== process.pid && isAlive(holder)) {
      throw new DataDirInUse(`DATA_DIR ${dataDir} is in use by process ${holder}; stop it first`)
    }
    await rm(path, { force: true })
  }
  throw new DataDirInUse(`could not lock DATA_DIR ${dataDir}`)
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}
