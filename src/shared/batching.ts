import { setImmediate } from 'node:timers'

export type GroupCommitOptions = {
  // The most items one batch takes; the rest wait for the next.
  maxBatchSize: number
  // How many batches may be in the database at once.
  inFlight: number
  // When nothing is in the database, the next batch starts after the current turn's microtasks
  // ('microtask': a database on another process, whose statements leave this thread free to read
  // requests) or after the turn's input has been read ('immediate', the default: see below).
  idleStart?: 'microtask' | 'immediate'
}

// Runs a batch; one settled result per input, in order.
export type RunBatch<In, Out> = (inputs: In[]) => Promise<PromiseSettledResult<Out>[]>

type Waiting<In, Out> = { input: In; resolve: (value: Out) => void; reject: (reason: unknown) => void }

// Group commit: while a batch is in the database, arriving items queue, and when it returns all of
// them go in the next. There is no timer: an item that finds a lane free goes at once, with those
// that arrive in the same turn of the event loop, so a lone item waits for nothing, and under load
// the batches grow by themselves to what arrived during one round trip. A batch starts only once
// the turn's input has been read (setImmediate, not a microtask): an embedded database runs on
// this thread and reads no request while a statement runs, so requests that piled up meanwhile are
// read, and queue, before the next batch starts.
export function groupCommit<In, Out>(
  run: RunBatch<In, Out>,
  { maxBatchSize, inFlight, idleStart = 'immediate' }: GroupCommitOptions,
): (input: In) => Promise<Out> {
  const queue: Waiting<In, Out>[] = []
  let running = 0
  let scheduled = false

  const start = () => {
    scheduled = false
    while (running < inFlight && queue.length > 0) {
      const batch = queue.splice(0, maxBatchSize)
      running++
      void run(batch.map((waiting) => waiting.input))
        .then(
          (results) => {
            for (const [index, waiting] of batch.entries()) {
              const result = results[index]
              if (result?.status === 'fulfilled') waiting.resolve(result.value)
              else waiting.reject(result ? result.reason : new Error('a batch gave no result for an item'))
            }
          },
          (error: unknown) => {
            for (const waiting of batch) waiting.reject(error)
          },
        )
        .finally(() => {
          running--
          schedule()
        })
    }
  }

  const schedule = () => {
    if (scheduled || running >= inFlight || queue.length === 0) return
    scheduled = true
    setImmediate(start)
  }

  return (input) =>
    new Promise<Out>((resolve, reject) => {
      queue.push({ input, resolve, reject })
      if (idleStart === 'microtask' && running === 0 && !scheduled) {
        // Nothing in the database, so no batch is forming: waiting for the turn would only delay
        // this item. Those submitted in the same turn still join it.
        scheduled = true
        queueMicrotask(start)
      } else schedule()
    })
}
