import type { SpawnOptions, Subprocess } from 'bun'
import { withTestKeys } from './test-keys.ts'

export type Env = Record<string, string>

export type ServerProcess = {
  url: string
  process: Subprocess<'ignore', 'pipe', 'pipe'>
  // The lines the server wrote to stdout up to the one saying it listens (its start).
  startLines: string[]
  // The latest lines the server wrote to stdout since it listened (its request log).
  logLines: () => string[]
  // Sends the signal and resolves with the exit code.
  stop: (signal?: NodeJS.Signals) => Promise<number>
}

const ROOT = new URL('../..', import.meta.url).pathname

// What every child of a test starts from: a PATH to find bun and the tools, a HOME, and nothing
// else of the test's own environment.
export function plainEnv(env: Env = {}): Env {
  return { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env }
}

// A server's or a command's: logging at info, with the test KEK when it uses PostgreSQL.
export function childEnv(env: Env): Env {
  return withTestKeys(plainEnv({ LOG_LEVEL: 'info', ...env }))
}

// The server as `bun run start` runs it: request headers up to 128 KiB reach the app (Bun's own
// limit is 16 KiB, answered with a bare 431), so an oversized token still gets the 401 Error body.
export const SERVER_COMMAND = ['bun', '--max-http-header-size=131072', 'src/start/main.ts']

// The server's process as every test starts it: from the repository's root (or `cwd`, another
// checkout's), on a free port, with a child's environment, its stdin closed and its stdout and
// stderr piped unless the test hands them elsewhere (a file descriptor, or 'ignore'). `ownGroup`
// puts it in a process group of its own (the child leads it), as a supervisor does, so `-pid`
// signals all of it.
export function spawnServer<
  Out extends SpawnOptions.Readable = 'pipe',
  Err extends SpawnOptions.Readable = 'pipe',
>(
  env: Env,
  {
    command = SERVER_COMMAND,
    cwd = ROOT,
    ownGroup = false,
    stdout = 'pipe' as Out,
    stderr = 'pipe' as Err,
  }: { command?: string[]; cwd?: string; ownGroup?: boolean; stdout?: Out; stderr?: Err } = {},
): Subprocess<'ignore', Out, Err> {
  return Bun.spawn(command, {
    cwd,
    detached: ownGroup,
    env: childEnv({ HOST: '127.0.0.1', PORT: '0', ...env }),
    stdin: 'ignore',
    stdout,
    stderr,
  })
}

// Starts the server and waits until it logs that it listens.
export async function startServer(
  env: Env,
  command = SERVER_COMMAND,
  { ownGroup = false, cwd = ROOT }: { ownGroup?: boolean; cwd?: string } = {},
): Promise<ServerProcess> {
  const child = spawnServer(env, { command, cwd, ownGroup })
  const { port, startLines, logLines } = await listeningPort(child)
  return {
    url: `http://127.0.0.1:${port}`,
    process: child,
    startLines,
    logLines,
    stop: async (signal = 'SIGTERM') => {
      child.kill(signal)
      return child.exited
    },
  }
}

// Of the log after the start, this much is kept for logLines(); a long test does not grow it.
const KEPT_LOG_CHARS = 1_000_000

async function listeningPort(
  child: Subprocess<'ignore', 'pipe', 'pipe'>,
): Promise<{ port: number; startLines: string[]; logLines: () => string[] }> {
  const reader = child.stdout.getReader()
  const decoder = new TextDecoder()
  let buffered = ''
  const deadline = Date.now() + 30_000
  while (Date.now() < deadline) {
    const { done, value } = await reader.read()
    if (done) break
    buffered += decoder.decode(value, { stream: true })
    const lines = buffered.split('\n')
    for (const [index, line] of lines.entries()) {
      if (line.includes('plant store listening')) {
        reader.releaseLock()
        // Chunks, joined only when asked: cutting one string to size at every chunk copied the
        // whole megabyte each time, which under load cost this process more CPU than the server
        // being measured spent, and blocked the server's log writes on a full pipe.
        const kept: string[] = []
        let keptChars = 0
        const keep = new WritableStream<Uint8Array>({
          write: (chunk) => {
            const text = decoder.decode(chunk, { stream: true })
            kept.push(text)
            keptChars += text.length
            while (keptChars - (kept[0]?.length ?? 0) >= KEPT_LOG_CHARS)
              keptChars -= kept.shift()?.length ?? 0
          },
        })
        void child.stdout.pipeTo(keep).catch(() => {})
        const logLines = () =>
          kept
            .join('')
            .slice(-KEPT_LOG_CHARS)
            .split('\n')
            .filter((line) => line !== '')
        const startLines = lines.slice(0, index + 1)
        return { port: (JSON.parse(line) as { port: number }).port, startLines, logLines }
      }
    }
  }
  child.kill('SIGKILL')
  throw new Error(`the server did not start: ${buffered}${await new Response(child.stderr).text()}`)
}

// The CLI as `bun run cli` runs it, from the repository's root.
export const CLI_COMMAND = ['bun', 'src/cli/command-line.ts']

// Starts a command of the CLI; the caller waits for it, or stops it on the way. Its stdin is
// `input`, or a pipe the caller writes to (`pipe`), or nothing. `cwd`: another checkout's root.
export function startCli(
  args: string[],
  env: Env,
  options: { pipe: true; cwd?: string },
): Subprocess<'pipe', 'pipe', 'pipe'>
export function startCli(
  args: string[],
  env: Env,
  options?: { input?: string; cwd?: string },
): Subprocess<'ignore', 'pipe', 'pipe'>
export function startCli(
  args: string[],
  env: Env,
  { input, pipe = false, cwd = ROOT }: { input?: string; pipe?: boolean; cwd?: string } = {},
): Subprocess<SpawnOptions.Writable, 'pipe', 'pipe'> {
  return Bun.spawn([...CLI_COMMAND, ...args], {
    cwd,
    env: childEnv(env),
    stdin: pipe ? 'pipe' : input === undefined ? 'ignore' : new TextEncoder().encode(input),
    stdout: 'pipe',
    stderr: 'pipe',
  })
}

// Runs a command of the CLI to completion.
export async function runCli(args: string[], env: Env, stdin?: string) {
  const child = startCli(args, env, { input: stdin })
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { stdout, stderr, exitCode }
}

// Runs the server entry expecting it to refuse to start.
export async function runServerToExit(env: Env, command = SERVER_COMMAND) {
  const child = spawnServer(env, { command })
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  clearTimeout(timer)
  return { stdout, stderr, exitCode }
}
