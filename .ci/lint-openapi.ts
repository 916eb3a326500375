// `bun run lint:openapi`: the OpenAPI document the server serves, linted by `redocly lint` with
// its recommended rules, which it must pass without an error. Offline: the document is built from the routes in process,
// and Redocly's telemetry is turned off.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createTokenVerifier } from '../src/auth/token-verifier.ts'
import type { Database } from '../src/database/database.ts'
import { silentLogger } from '../src/shared/logger.ts'
import { createApp } from '../src/start/app.ts'

// The document needs the routes, not a database: no request reaches one here.
const app = createApp({
  db: {} as Database,
  verifyToken: createTokenVerifier({ secret: new Uint8Array(32) }),
  logger: silentLogger(),
})
const document = await (await app.handle(new Request('http://localhost/openapi.json'))).text()
const dir = mkdtempSync(join(tmpdir(), 'plant-store-openapi-'))
try {
  const file = join(dir, 'openapi.json')
  writeFileSync(file, document)
  const lint = Bun.spawn(['redocly', 'lint', '--extends', 'recommended', '--format', 'stylish', file], {
    stdout: 'inherit',
    stderr: 'inherit',
    env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
  })
  process.exitCode = await lint.exited
} finally {
  rmSync(dir, { recursive: true, force: true })
}
