import { readFile } from 'node:fs/promises'
import process from 'node:process'
import { runAs } from '../shared/run-as.ts'

// A PostgreSQL server's processes: the postmaster and every process it started (backends, the
// checkpointer, the I/O workers, autovacuum), for a gauge of the database's memory.
export async function serverProcessIds(postmaster: number): Promise<number[]> {
  const children =
    process.platform === 'linux'
      ? await readFile(`/proc/${postmaster}/task/${postmaster}/children`, 'utf8').catch(() => '')
      : (await runAs(undefined, 'pgrep', ['-P', String(postmaster)])).stdout
  return [
    postmaster,
    ...children
      .split(/\s+/)
      .filter((pid) => pid !== '')
      .map(Number),
  ]
}
