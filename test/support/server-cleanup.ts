// Servers a test starts stop with it: after its tests (afterAll calls the stop function), and
// otherwise once the test process has ended, however it ends. `bun test` runs no exit handlers and
// a killed process none at all, so a small shell started beside the servers waits for this
// process to end and then runs `fallback`; a normal stop cancels it. `cleanup` must be synchronous.
export function stopOnExit(cleanup: () => void, fallback: string): () => void {
  const reaper = Bun.spawn(
    ['sh', '-c', `while kill -0 ${process.pid} 2>/dev/null; do sleep 0.5; done; ${fallback}`],
    { detached: true, stdin: 'ignore', stdout: 'ignore', stderr: 'ignore' },
  )
  reaper.unref()
  let done = false
  return () => {
    if (done) return
    done = true
    reaper.kill('SIGKILL')
    cleanup()
  }
}

// Quotes a value for the fallback shell.
export function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`
}

// A port nothing listens on right now.
export function freePort(): number {
  const server = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = server.port
  server.stop(true)
  return port
}
