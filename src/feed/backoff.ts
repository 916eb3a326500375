// Waits that double from `first` up to `max`: bounded, so the feed is back within `max` of the
// fault clearing.
export function backoffDelay(failures: number, first = 100, max = 2000): number {
  return Math.min(first * 2 ** Math.max(0, failures), max)
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
