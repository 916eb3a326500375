import { sql } from 'drizzle-orm'
import { Elysia } from 'elysia'
import { errorResponse } from './http/http-error.ts'
import type { Database } from './store/database.ts'

const READY_TIMEOUT_MS = 2000

export function healthRoutes({ db }: { db: Database }) {
  return new Elysia({ name: 'health' })
    .get('/health', () => ({ status: 'ok' }))
    .get('/ready', async () => {
      const ready = await Promise.race([
        db.execute(sql`select 1`).then(
          () => true,
          () => false,
        ),
        new Promise<boolean>((resolve) => setTimeout(resolve, READY_TIMEOUT_MS, false)),
      ])
      return ready
        ? { status: 'ready' }
        : errorResponse(503, 'the database is unreachable', { 'retry-after': '5' })
    })
}
