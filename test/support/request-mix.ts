// The soak's mixed load: which kinds of request, in what proportion, and the one status each
import { tokenHeader } from './plant-client.ts'
// kind is meant to get. Anything else is an unintended answer.
export const INTENDED_STATUS = {
  create: 200,
  retry: 200,
  conflict: 409,
  'list-all': 200,
  'list-page': 200,
  'bad-json': 400,
  'bad-body': 400,
  'bad-limit': 400,
  'bad-cursor': 400,
  'no-token': 401,
  'bad-token': 401,
  'too-large': 413,
  'wrong-type': 415,
} as const

export type Kind = keyof typeof INTENDED_STATUS

// Per 100 requests; a cycle of exactly these, shuffled once, so every window has the same mix.
const WEIGHTS: Record<Kind, number> = {
  create: 25,
  retry: 15,
  conflict: 5,
  'list-all': 10,
  'list-page': 20,
  'bad-json': 4,
  'bad-body': 4,
  'bad-limit': 3,
  'bad-cursor': 3,
  'no-token': 4,
  'bad-token': 4,
  'too-large': 1,
  'wrong-type': 2,
}

export function kindCycle(seed = 6): Kind[] {
  const cycle = (Object.entries(WEIGHTS) as [Kind, number][]).flatMap(([kind, n]) => Array(n).fill(kind))
  // Fisher–Yates with a small deterministic generator: the same order on every run.
  let state = seed
  const random = () => {
    state = (state * 1_103_515_245 + 12_345) % 2 ** 31
    return state / 2 ** 31
  }
  for (let i = cycle.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1))
    ;[cycle[i], cycle[j]] = [cycle[j] as Kind, cycle[i] as Kind]
  }
  return cycle
}

type Created = { owner: number; id: number; name: string; tag?: string }

// What the load remembers so retries, conflicts and cursors refer to real plants and pages.
export type MixState = {
  tokens: string[]
  created: Created[]
  nextId: number
  cursors: { owner: number; after: string }[]
}

export type PlannedRequest = {
  path: string
  init: RequestInit
  // Called with a response that got the intended status, to remember what it created or linked.
  onIntended?: (response: Response) => void
}

const json = 'application/json'
const auth = (token: string) => tokenHeader(token)

// The request for the i-th tick. Kinds that need an earlier plant fall back to a create.
export function planRequest(kind: Kind, state: MixState, i: number): { kind: Kind; planned: PlannedRequest } {
  const owner = i % state.tokens.length
  const token = state.tokens[owner] as string
  const earlier = state.created[(i * 7919) % Math.max(state.created.length, 1)]
  const post = (
    body: string,
    headers: Record<string, string> = { 'content-type': json, ...auth(token) },
  ) => ({
    path: '/plants',
    init: { method: 'POST', headers, body },
  })
  switch (kind) {
    case 'create': {
      const plant: Created = {
        owner,
        id: state.nextId++,
        name: `plant-${i}`,
        tag: i % 3 ? `t${i % 5}` : undefined,
      }
      return {
        kind,
        planned: { ...post(JSON.stringify(plant)), onIntended: () => void state.created.push(plant) },
      }
    }
    case 'retry':
    case 'conflict': {
      if (!earlier) return planRequest('create', state, i)
      const name = kind === 'retry' ? earlier.name : `${earlier.name}-changed`
      const body = JSON.stringify({ id: earlier.id, name, tag: earlier.tag })
      return {
        kind,
        planned: post(body, { 'content-type': json, ...auth(state.tokens[earlier.owner] as string) }),
      }
    }
    case 'list-all':
      return { kind, planned: { path: '/plants', init: { headers: auth(token) } } }
    case 'list-page': {
      const cursor = state.cursors.find((c) => c.owner === owner)
      const after = cursor && i % 2 === 0 ? `&after=${cursor.after}` : ''
      return {
        kind,
        planned: {
          path: `/plants?limit=10${after}`,
          init: { headers: auth(token) },
          onIntended: (response) => rememberCursor(state, owner, response),
        },
      }
    }
    case 'bad-json':
      return { kind, planned: post('{"id": 1, "name": ') }
    case 'bad-body':
      return { kind, planned: post(JSON.stringify({ id: '7', name: '' })) }
    case 'bad-limit':
      return { kind, planned: { path: '/plants?limit=-1', init: { headers: auth(token) } } }
    case 'bad-cursor':
      return { kind, planned: { path: '/plants?limit=5&after=not-a-cursor', init: { headers: auth(token) } } }
    case 'no-token':
      return { kind, planned: post('{"id": 1, "name": "x"}', { 'content-type': json }) }
    case 'bad-token':
      return { kind, planned: post('{"id": 1, "name": "x"}', { 'content-type': json, ...auth(`${token}x`) }) }
    case 'too-large':
      return { kind, planned: post(JSON.stringify({ id: 1, name: 'x'.repeat(70_000) })) }
    case 'wrong-type':
      return {
        kind,
        planned: post('{"id": 1, "name": "x"}', { 'content-type': 'text/plain', ...auth(token) }),
      }
  }
}

// Keeps one recent cursor per owner, so page requests walk real next links.
function rememberCursor(state: MixState, owner: number, response: Response) {
  const after = /[?&]after=([^&>]+)/.exec(response.headers.get('link') ?? '')?.[1]
  state.cursors = state.cursors.filter((c) => c.owner !== owner)
  if (after) state.cursors.push({ owner, after })
}
