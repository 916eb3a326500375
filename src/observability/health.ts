import { Type } from '@sinclair/typebox'
import { sql } from 'drizzle-orm'
import { Elysia } from 'elysia'
import type { Database } from '../database/database.ts'
import { replies, reply, unavailable } from '../openapi/replies.ts'
import { Failure } from '../shared/errors.ts'
import { within } from '../shared/time-limit.ts'

const READY_TIMEOUT_MS = 2000

const status = (value: string) => Type.Object({ status: Type.Literal(value) })
const live = replies({ 200: reply(status('ok'), 'Liveness') })
const ready = replies({ 200: reply(status('ready'), 'Ready'), 503: unavailable })

export function healthRoutes({ db }: { db: Database }) {
  return new Elysia({ name: 'health' })
    .get(
      '/health',
      ({ set }) => {
        // One form for every JSON answer; Elysia's default adds `;charset=utf-8`.
        set.headers['content-type'] = 'application/json'
        return { status: 'ok' as const }
      },
      {
        response: live.response,
        detail: {
          operationId: 'getHealth',
          summary: 'Liveness',
          tags: ['health'],
          security: [],
          responses: live.responses,
        },
      },
    )
    .get(
      '/ready',
      ({ set }) => {
        set.headers['content-type'] = 'application/json'
        return readiness(db)
      },
      {
        response: ready.response,
        detail: {
          operationId: 'getReadiness',
          summary: 'Readiness: the database answers',
          tags: ['health'],
          security: [],
          responses: ready.responses,
        },
      },
    )
}

async function readiness(db: Database) {
  const answer = db.execute(sql`select 1`).catch(() => undefined)
  if ((await within(answer, READY_TIMEOUT_MS)) === undefined) {
    throw new Failure('UNAVAILABLE', 'the database is unreachable', { 'retry-after': '5' })
  }
  return { status: 'ready' as const }
}
