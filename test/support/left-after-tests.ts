import { afterAll } from 'bun:test'
import { rm } from 'node:fs/promises'
import type { ServerProcess } from './server-process.ts'

// For the tests of the calling file: what they leave behind, cleaned up after them all. The
// servers they push are killed, then the folders they push removed.
export function leftAfterTests(): { servers: ServerProcess[]; folders: string[] } {
  const servers: ServerProcess[] = []
  const folders: string[] = []
  afterAll(async () => {
    for (const server of servers) server.process.kill('SIGKILL')
    for (const folder of folders) await rm(folder, { recursive: true, force: true })
  })
  return { servers, folders }
}
