import { issueToken } from '../../src/auth/issue-token.ts'

// Plain fetch helpers for tests that talk to a real server process.

// The Authorization header of a request with the caller's token: every test that sends a token
// builds its header here.
export function tokenHeader(token: string): { authorization: string } {
  return { authorization: `Bearer ${token}` }
}

// A token for each subject, valid for an hour, signed with `secret` (a server's AUTH_JWT_SECRET).
export async function tokensFor<Subject extends string>(
  secret: string,
  subjects: Subject[],
): Promise<Record<Subject, string>> {
  const key = new TextEncoder().encode(secret)
  const now = new Date()
  const tokens = await Promise.all(
    subjects.map((subject) => issueToken(key, { subject, ttlSeconds: 3600, now })),
  )
  return Object.fromEntries(subjects.map((subject, index) => [subject, tokens[index]])) as Record<
    Subject,
    string
  >
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
