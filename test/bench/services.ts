import { type Env, type ServerProcess, startServer } from '../support/server-process.ts'
import { sampleMemory } from './memory.ts'

// The processes under test, started the way an operator would start them.
export type Bench = {
  secret: string
  poolSize: number
  logLevel: string
}

export async function startService(
  bench: Bench,
  databaseUrl: string,
  extra: Env = {},
): Promise<ServerProcess> {
  return drained(
    await startServer({
      DATABASE_URL: databaseUrl,
      AUTH_JWT_SECRET: bench.secret,
      DATABASE_POOL_SIZE: String(bench.poolSize),
      LOG_LEVEL: bench.logLevel,
      ...extra,
    }),
  )
}

export async function startHttpCeiling(bench: Bench): Promise<ServerProcess> {
  return drained(await startServer({ AUTH_JWT_SECRET: bench.secret }, ['bun', 'test/bench/http-ceiling.ts']))
}

// Nobody reads a bench server's stderr: drain it, so a full pipe never stalls the server.
function drained(server: ServerProcess): ServerProcess {
  void server.process.stderr.pipeTo(new WritableStream()).catch(() => {})
  return server
}

export type SqlRun = {
  mode: 'create' | 'page'
  url: string
  poolSize: number
  connections: number
  seconds: number
  ownersFile: string
  idBase: number
}

export type SqlResult = {
  requestsPerSecond: number
  p50Ms: number
  p99Ms: number
  rssMb: number
  errors: number
  statements: { wave: number; prepared: boolean; query: string }[]
}

export async function runSqlCeiling(run: SqlRun): Promise<SqlResult> {
  const child = Bun.spawn(
    [
      'bun',
      'test/bench/sql-ceiling.ts',
      run.mode,
      run.url,
      String(run.poolSize),
      String(run.connections),
      String(run.seconds),
      run.ownersFile,
      String(run.idBase),
    ],
    { cwd: new URL('../..', import.meta.url).pathname, stdout: 'pipe', stderr: 'pipe' },
  )
  const memory = sampleMemory(child.pid)
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  const rssMb = memory.stop()
  const line = stdout.split('\n').find((text) => text.startsWith('{'))
  if (exitCode !== 0 || !line) throw new Error(`the SQL ceiling failed (${exitCode}): ${stderr}`)
  return { ...(JSON.parse(line) as Omit<SqlResult, 'rssMb'>), rssMb }
}
