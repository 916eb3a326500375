import { afterAll, beforeAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { POSTGRES_ADMIN_URL } from '../support/postgres.ts'
import { freePort } from '../support/server-cleanup.ts'
import { runServerToExit } from '../support/server-process.ts'

const SECRET = 'unreachable-database-secret-of-32-bytes'
// A role the server refuses at authentication: it exists, but may not log in.
const REFUSED_ROLE = `plant_store_nologin_${crypto.randomUUID().slice(0, 8)}`

const admin = postgres(POSTGRES_ADMIN_URL, { max: 1, onnotice: () => {} })
// A port that accepts connections and never says a word, as a host behind a dead proxy does.
const silent = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
beforeAll(async () => {
  await admin.unsafe(`create role ${REFUSED_ROLE} nologin password 'not-a-secret'`)
})
afterAll(async () => {
  silent.stop(true)
  await admin.unsafe(`drop role if exists ${REFUSED_ROLE}`)
  await admin.end()
})

function urlWith(parts: Partial<Pick<URL, 'port' | 'pathname' | 'username' | 'password'>>): string {
  return Object.assign(new URL(POSTGRES_ADMIN_URL), parts).toString()
}

const cases = [
  {
    name: 'nothing listening on the port',
    url: () => urlWith({ port: String(freePort()) }),
    cause: /refused/i,
  },
  {
    name: 'a port that never answers',
    url: () => urlWith({ port: String(silent.port) }),
    cause: /no answer within 10 s/,
  },
  {
    name: 'a database that does not exist',
    url: () => urlWith({ pathname: '/plant_store_no_such_database' }),
    cause: /database "plant_store_no_such_database" does not exist/,
  },
  {
    name: 'a role refused at authentication',
    url: () => urlWith({ username: REFUSED_ROLE, password: 'not-a-secret' }),
    cause: new RegExp(`role "${REFUSED_ROLE}" is not permitted to log in`),
  },
]

test.each(cases)(
  'a start against $name stops within 30 s with one line naming DATABASE_URL',
  async ({ url, cause }) => {
    // given a DATABASE_URL that cannot be used
    const startedAt = performance.now()
    // when the server starts
    const { stderr, exitCode } = await runServerToExit({ DATABASE_URL: url(), AUTH_JWT_SECRET: SECRET })
    // then it exits non-zero within 30 s
    expect(exitCode).not.toBe(0)
    expect(performance.now() - startedAt).toBeLessThan(30_000)
    // with one line that names the variable and the cause, and no stack, source or password
    const lines = stderr.trimEnd().split('\n')
    expect(lines).toHaveLength(1)
    expect(lines[0]).toContain('DATABASE_URL')
    expect(lines[0]).toMatch(cause)
    expect(stderr).not.toMatch(/\bat\s|node_modules|\.ts:\d|\.js:\d|not-a-secret/)
  },
  40_000,
)
