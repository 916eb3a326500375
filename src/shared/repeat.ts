// Runs `task` every `everyMs` until stopped, one run at a time: the next is planned when the last
// has ended, so that a slow run never overlaps the next. A run that fails is handed to `failed`,
// and the next runs as planned.
export function repeatEvery(
  everyMs: number,
  task: () => Promise<void>,
  failed: (error: unknown) => void,
): { stop: () => void } {
  let stopped = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const next = () => {
    timer = setTimeout(async () => {
      await task().catch(failed)
      if (!stopped) next()
    }, everyMs)
  }
  next()
  return {
    stop: () => {
      stopped = true
      clearTimeout(timer)
    },
  }
}
