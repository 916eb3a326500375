import type { ServerProcess } from './server-process.ts'
import { type ServiceStorage, startService } from './service.ts'

// The zero-setup default with no server started yet: the embedded store in a data directory, and
// no secret given, so that the service makes its own.
export function startEmbeddedDefault(label: string): Promise<ServiceStorage> {
  return startService({ storage: 'embedded', secret: null, label, instances: 0 })
}

// The default as a newcomer first runs it: a token from the CLI (issued before the server starts,
// so that the server takes the secret the CLI made), then one server.
export async function serveEmbeddedDefault(
  label: string,
  tokenArgs: string[],
): Promise<{ storage: ServiceStorage; server: ServerProcess; token: string }> {
  const storage = await startEmbeddedDefault(label)
  const issued = await storage.cli(['token', 'issue', ...tokenArgs])
  if (issued.exitCode !== 0) {
    await storage.stop()
    throw new Error(`token issue exited ${issued.exitCode}: ${issued.stderr.trim()}`)
  }
  return { storage, server: await storage.startAnother(), token: issued.stdout.trim() }
}
