import pino from 'pino'

export type LogOutput = {
  // Where the logger writes its lines.
  write: (line: string) => void
  // Lines dropped because stdout did not take them and the buffer reached its bound.
  dropped: () => number
  // Resolves once what is held has been written, or after `ms` whatever stdout does (what it
  // still holds then is lost with the process).
  flush: (ms: number) => Promise<void>
}

// Lines go to stdout in chunks of 4 KiB, or every 100 ms, rather than a write each: every write
// wakes whoever reads the other end (a log collector), which on a busy server costs more than the
// line. The writes are asynchronous, so a reader that stalls or is gone (a full or closed pipe)
// never blocks a request or a stop: past MAX_HELD_BYTES new lines are dropped, and counted.
const MIN_WRITE_BYTES = 4096
const FLUSH_EVERY_MS = 100
const MAX_HELD_BYTES = 4 * 1024 * 1024

export function stdoutLog(): LogOutput {
  const stdout = pino.destination({
    dest: 1,
    sync: false,
    minLength: MIN_WRITE_BYTES,
    maxLength: MAX_HELD_BYTES,
    periodicFlush: FLUSH_EVERY_MS,
  })
  let dropped = 0
  let readerGone = false
  stdout.on('drop', () => {
    dropped++
  })
  // A reader that has gone (EPIPE) will read nothing more: pino stops writing, and every line from
  // then on counts as dropped.
  stdout.on('error', (error: { code?: unknown }) => {
    if (error.code === 'EPIPE') readerGone = true
  })
  return {
    write: (line) => {
      if (readerGone) dropped++
      else stdout.write(line)
    },
    dropped: () => dropped,
    flush: (ms) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          // What is still held is given up: pino would otherwise write it synchronously as the
          // process exits, and a full pipe would then hold the exit for ever.
          stdout.destroy()
          resolve()
        }, ms)
        stdout.flush(() => {
          clearTimeout(timer)
          resolve()
        })
      }),
  }
}
