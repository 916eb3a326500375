// Plain fetch helpers for tests that talk to a real server process.

// The Authorization header of a request with the caller's token: every test that sends a token
// builds its header here.
export function tokenHeader(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` }
}

export type PlantBody = { id: number | string; name: string; tag?: string | null }

export function postPlant(baseUrl: string, token: string, plant: PlantBody, signal?: AbortSignal) {
  return fetch(`${baseUrl}/plants`, {
    method: 'POST',
    headers: { ...tokenHeader(token), 'content-type': 'application/json' },
    body: JSON.stringify(plant),
    signal,
  })
}

// Every plant of the caller, following the Link header page by page.
export async function listEveryPlant(
  baseUrl: string,
  token: string,
  pageSize = 100,
): Promise<{ name: string; tag?: string }[]> {
  const found: { name: string; tag?: string }[] = []
  let path: string | undefined = `/plants?limit=${pageSize}`
  while (path) {
    const response: Response = await fetch(`${baseUrl}${path}`, { headers: tokenHeader(token) })
    if (response.status !== 200) throw new Error(`listing ${path} answered ${response.status}`)
    found.push(...((await response.json()) as { name: string; tag?: string }[]))
    path = /<([^>]+)>;\s*rel="next"/.exec(response.headers.get('link') ?? '')?.[1]
  }
  return found
}
