// Resolves once any of `signals` aborts, and takes its listeners with it: a long-lived signal
// (the relay's stop) waited on in a loop must not gather one per wait, as `AbortSignal.any` does
// (denoland/deno#24842, nodejs/node#55351).
export function aborted(...signals: AbortSignal[]): Promise<void> {
  return new Promise((resolve) => {
    if (signals.some((signal) => signal.aborted)) return resolve()
    const done = () => {
      for (const signal of signals) signal.removeEventListener('abort', done)
      resolve()
    }
    for (const signal of signals) signal.addEventListener('abort', done)
  })
}

// The promise's value, or undefined once `signal` aborts first (the promise runs on, unheeded).
export function unlessAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T | undefined> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return resolve(undefined)
    const onAbort = () => resolve(undefined)
    signal.addEventListener('abort', onAbort, { once: true })
    promise.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}

// Waits `ms`, or less when a signal aborts.
export function pause(ms: number, ...signals: AbortSignal[]): Promise<void> {
  return aborted(AbortSignal.timeout(ms), ...signals)
}
