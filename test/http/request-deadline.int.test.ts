import { expect, test } from 'bun:test'
import { createLogger } from '../../src/shared/logger.ts'
import type { App } from '../../src/start/app.ts'
import { serve } from '../../src/start/serve.ts'

test('a request the deadline answers 503 is logged at warn with its request id, as LOG_LEVEL=warn promises', async () => {
  // given a server whose app never answers (a database gone silent) and a log at warn
  const lines: { level: number; status?: number; requestId?: string; path?: string }[] = []
  const logger = createLogger('warn', { write: (line) => void lines.push(JSON.parse(line)) })
  const silentApp = { fetch: () => new Promise<Response>(() => {}) } as unknown as App
  const server = serve(silentApp, { hostname: '127.0.0.1', port: 0, requestTimeoutMs: 300, logger })
  try {
    // when a request waits past the deadline
    const response = await fetch(`http://127.0.0.1:${server.port}/plants`, {
      headers: { 'x-request-id': 'waited-too-long' },
      signal: AbortSignal.timeout(10_000),
    })
    // then it is answered 503 and the answer is logged at warn
    expect(response.status).toBe(503)
    expect(await response.json()).toEqual({ error: 503, message: 'no answer within 300 ms; retry later' })
    expect(lines).toEqual([
      expect.objectContaining({ level: 40, status: 503, requestId: 'waited-too-long', path: '/plants' }),
    ])
  } finally {
    await Promise.race([server.stop(), Bun.sleep(1_000)])
  }
})
