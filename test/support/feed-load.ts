import { postPlant } from './plant-client.ts'

export type Load = {
  // Stops the load and resolves with what it saw.
  stop: () => Promise<LoadResult>
}

export type LoadResult = { acknowledged: number; statuses: number[]; failed: number; latenciesMs: number[] }

// Creations of fresh plants, `workers` at a time, spread over the servers until stopped. A
// request whose server died under it counts as failed, never acknowledged.
export function startLoad(urls: () => string[], token: string, { workers = 8, firstId = 1 } = {}): Load {
  let stopped = false
  let nextId = firstId
  const result: LoadResult = { acknowledged: 0, statuses: [], failed: 0, latenciesMs: [] }
  const worker = async () => {
    while (!stopped) {
      const id = nextId++
      const targets = urls()
      const url = targets[id % targets.length] as string
      const started = performance.now()
      try {
        const response = await postPlant(url, token, { id, name: `load ${id}` })
        await response.arrayBuffer()
        result.latenciesMs.push(performance.now() - started)
        if (response.status === 200) result.acknowledged++
        else result.statuses.push(response.status)
      } catch {
        result.failed++
      }
    }
  }
  const running = Promise.all(Array.from({ length: workers }, worker))
  return {
    stop: async () => {
      stopped = true
      await running
      return result
    },
  }
}

// The value of a metric without labels in a Prometheus text exposition.
export async function metricValue(url: string, name: string): Promise<number | undefined> {
  const text = await (await fetch(`${url}/metrics`)).text()
  const line = text.split('\n').find((candidate) => candidate.startsWith(`${name} `))
  return line === undefined ? undefined : Number(line.slice(name.length + 1))
}
