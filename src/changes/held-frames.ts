import type { Frame } from './change-frame.ts'

// Live events that arrive while a stream catches up, held until it has caught up. Past
// `maxBytes` they are dropped (`missed`): the next read from the database covers them.
export function heldFrames(maxBytes: number) {
  let frames: Frame[] = []
  let bytes = 0
  let missed = false
  return {
    // False when this frame passed the bound and every held one was dropped.
    hold: (frame: Frame): boolean => {
      if (missed) return true
      frames.push(frame)
      bytes += frame.bytes.byteLength
      if (bytes <= maxBytes) return true
      frames = []
      bytes = 0
      missed = true
      return false
    },
    // The frames held, or `missed` when some were dropped; nothing is held after.
    release: (): { frames: Frame[]; missed: boolean } => {
      const released = { frames, missed }
      frames = []
      bytes = 0
      missed = false
      return released
    },
  }
}
