import { Buffer } from 'node:buffer'
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
  const deno = (globalThis as { Deno?: Parameters<typeof denoStdoutLog>[0] }).Deno
  if (deno)
    return denoStdoutLog(deno, {
      minWriteBytes: MIN_WRITE_BYTES,
      flushEveryMs: FLUSH_EVERY_MS,
      maxHeldBytes: MAX_HELD_BYTES,
    })
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

type DenoStdout = { stdout: { write: (bytes: Uint8Array) => Promise<number> } }

// Under Deno, node:fs's asynchronous write to a pipe that nobody reads holds the event loop (every
// request waited, and a stop never ended), while Deno's own stdout writes off it. So the same
// output as pino's destination gives under Bun: lines held and written in chunks, one write at a
// time, dropped and counted past the bound or once the reader has gone.
export function denoStdoutLog(
  deno: DenoStdout,
  {
    minWriteBytes,
    flushEveryMs,
    maxHeldBytes,
  }: { minWriteBytes: number; flushEveryMs: number; maxHeldBytes: number },
): LogOutput {
  const encoder = new TextEncoder()
  let held: Uint8Array[] = []
  let heldBytes = 0
  let writing: Promise<void> | undefined
  let dropped = 0
  let readerGone = false

  const writeHeld = async () => {
    while (held.length > 0 && !readerGone) {
      const chunk = Buffer.concat(held, heldBytes)
      held = []
      heldBytes = 0
      let offset = 0
      try {
        while (offset < chunk.length) offset += await deno.stdout.write(chunk.subarray(offset))
      } catch (error) {
        // A reader that has gone (BrokenPipe) reads nothing more; a full pipe that Deno does not
        // wait on (WouldBlock) is tried again at the next flush, with the lines that came since.
        const rest = chunk.subarray(offset)
        if ((error as { name?: unknown }).name === 'BrokenPipe' || rest.length > maxHeldBytes) {
          readerGone ||= (error as { name?: unknown }).name === 'BrokenPipe'
          dropped += linesIn(rest)
        } else {
          held = [rest, ...held]
          heldBytes += rest.length
        }
        break
      }
    }
  }
  const startWriting = () => {
    writing ??= writeHeld().finally(() => {
      writing = undefined
    })
    return writing
  }
  const timer = setInterval(() => void startWriting(), flushEveryMs)
  // Deno.unrefTimer: the periodic flush does not keep a stopped service alive.
  ;(globalThis as { Deno?: { unrefTimer?: (id: number) => void } }).Deno?.unrefTimer?.(
    timer as unknown as number,
  )

  return {
    write: (line) => {
      const bytes = encoder.encode(line)
      if (readerGone || heldBytes + bytes.length > maxHeldBytes) {
        dropped++
        return
      }
      held.push(bytes)
      heldBytes += bytes.length
      if (heldBytes >= minWriteBytes) void startWriting()
    },
    dropped: () => dropped,
    flush: async (ms) => {
      let timeout: ReturnType<typeof setTimeout> | undefined
      const late = new Promise<void>((resolve) => {
        timeout = setTimeout(resolve, ms)
      })
      const written = (async () => {
        while ((held.length > 0 && !readerGone) || writing) {
          await startWriting()
          if (held.length > 0) await new Promise((resolve) => setTimeout(resolve, flushEveryMs))
        }
      })()
      await Promise.race([written, late])
      clearTimeout(timeout)
    },
  }
}

function linesIn(bytes: Uint8Array): number {
  return bytes.reduce((count, byte) => count + (byte === 10 ? 1 : 0), 0)
}
