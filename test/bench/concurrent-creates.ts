import { issueToken } from '../../src/auth/issue-token.ts'

// Owners `owner-0`, `owner-1`… creating side by side, one client each, their tokens signed with
// `secret`: each call makes `count` more plants, every client posting the next free id in turn.
export async function concurrentCreates(
  secret: string,
  clients: number,
  post: (token: string, id: number) => Promise<void>,
): Promise<(count: number) => Promise<void>> {
  const key = new TextEncoder().encode(secret)
  const tokens = await Promise.all(
    Array.from({ length: clients }, (_, index) =>
      issueToken(key, { subject: `owner-${index}`, ttlSeconds: 3600, now: new Date() }),
    ),
  )
  let next = 0
  return async (count) => {
    const end = next + count
    await Promise.all(
      tokens.map(async (token) => {
        for (let id = next++; id < end; id = next++) await post(token, id)
      }),
    )
  }
}
