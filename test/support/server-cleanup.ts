// Servers a test file started stop with it: after its tests (afterAll calls the stop functions),
// and also when the test process exits or is interrupted before that. Each cleanup runs once and
// must be synchronous, as an exit handler cannot wait.
const cleanups = new Set<() => void>()
let installed = false

export function stopOnExit(cleanup: () => void): () => void {
  install()
  let done = false
  const once = () => {
    if (done) return
    done = true
    cleanups.delete(once)
    cleanup()
  }
  cleanups.add(once)
  return once
}

function install(): void {
  if (installed) return
  installed = true
  const runAll = () => {
    for (const cleanup of [...cleanups]) {
      try {
        cleanup()
      } catch {}
    }
  }
  process.on('exit', runAll)
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.once(signal, () => {
      runAll()
      process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1))
    })
  }
}

// A port nothing listens on right now.
export function freePort(): number {
  const server = Bun.listen({ hostname: '127.0.0.1', port: 0, socket: { data() {} } })
  const port = server.port
  server.stop(true)
  return port
}
