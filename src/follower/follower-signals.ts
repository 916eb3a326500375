// The follower's loop rests between reads; a wake (a create here, another instance's notice, the
// stop) cuts the rest short, and one that comes during a read cuts the next rest short.
export function wakeups() {
  let woken = false
  let rouse = () => {}
  return {
    // Called before each read: only a wake after it counts.
    clear: () => {
      woken = false
    },
    rest: (ms: number) =>
      new Promise<void>((resolve) => {
        if (woken) return resolve()
        const timer = setTimeout(resolve, ms)
        rouse = () => {
          clearTimeout(timer)
          resolve()
        }
      }),
    wake: () => {
      woken = true
      rouse()
    },
  }
}

// Consumers waiting for the follower to move on.
export function advanceWaiters() {
  const waiters = new Set<() => void>()
  return {
    // The follower moved on (or stopped): every waiter resolves.
    notify: () => {
      for (const waiter of [...waiters]) waiter()
    },
    // Resolves when the follower next moves on, or after `ms`, or when `signal` aborts.
    next: (ms: number, signal?: AbortSignal) =>
      new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer)
          signal?.removeEventListener('abort', done)
          waiters.delete(done)
          resolve()
        }
        const timer = setTimeout(done, ms)
        signal?.addEventListener('abort', done)
        waiters.add(done)
      }),
  }
}

// With `idleAfterMs`, the follower reads only while held, and for that long after the last hold
// ends. Undefined: it reads always.
export function followerHolds(idleAfterMs: number | undefined) {
  let holds = 0
  let readsUntil = 0
  let demanded = () => {}
  const idle = () => idleAfterMs !== undefined && holds === 0 && Date.now() >= readsUntil
  return {
    idle,
    // Resolves once the follower is held again, or `release` is called.
    untilHeld: (stopped: () => boolean) =>
      new Promise<void>((resolve) => {
        demanded = resolve
        if (!idle() || stopped()) resolve()
      }),
    release: () => demanded(),
    // The returned function ends the hold (once).
    hold: () => {
      holds++
      demanded()
      let held = true
      return () => {
        if (!held) return
        held = false
        holds--
        if (holds === 0) readsUntil = Date.now() + (idleAfterMs ?? 0)
      }
    },
  }
}

// Resolves once the follower stands somewhere; parked after it stood, it waits again. The stop
// resolves it too, standing nowhere.
export function readiness() {
  let standing = false
  let resolve = () => {}
  let ready = new Promise<void>((resolved) => (resolve = resolved))
  return {
    ready: () => ready,
    stand: () => {
      standing = true
      resolve()
    },
    release: () => resolve(),
    park: () => {
      if (!standing) return
      standing = false
      ready = new Promise<void>((resolved) => (resolve = resolved))
    },
  }
}
