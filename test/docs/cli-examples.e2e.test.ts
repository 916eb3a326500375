import { afterAll, beforeAll, expect, test } from 'bun:test'
import { docFiles, printedLines, runBlock, shownLines } from '../support/readme.ts'
import { type Service, startService } from '../support/service.ts'
import { TEST_KEY_ENCRYPTION_KEYS } from '../support/test-keys.ts'

// The docs' examples of the CLI that the recipes' and the backups' tests do not run (keys.md's
// rotation, erasure.md's erase, feed.md's status), run as written against a store with two owners'
// plants, and a third's: each prints exactly the lines the docs show under it (`bun run --silent cli`: no line of
// Bun's own), the values that differ from run to run (a key's id, a stream, positions) as the docs
// write them.
const ROOT = new URL('../..', import.meta.url).pathname

let service: Service
beforeAll(async () => {
  service = await startService({ label: 'cli_examples', feed: true })
  const [alice, bob, carol] = await Promise.all(['alice', 'bob', 'carol'].map((sub) => service.tokenFor(sub)))
  for (const [token, plant] of [
    [alice, { id: 1, name: 'Monstera' }],
    [alice, { id: 2, name: 'Fern' }],
    [bob, { id: 1, name: 'Aloe' }],
    [carol, { id: 1, name: 'Basil' }],
  ] as const) {
    const created = await fetch(`${service.url}/plants`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(plant),
    })
    expect(created.status).toBe(200)
  }
}, 60_000)
afterAll(() => service?.stop())

// The `sh` block of the page at `path` that holds `containing`.
async function blockOf(path: string, containing: string): Promise<string> {
  const page = (await docFiles()).find((file) => file.path === path)?.text ?? ''
  const block = [...page.matchAll(/```sh\n([\s\S]*?)```/g)].find(([, text]) => text?.includes(containing))
  if (!block?.[1]) throw new Error(`${path} has no sh block with "${containing}"`)
  return block[1]
}

async function runAsShown(block: string, env: Record<string, string>, asInTheDocs: [RegExp, string][]) {
  // The service's settings, as an operator's shell has them
  const settings = {
    DATABASE_URL: String(service.databaseUrl),
    KEY_ENCRYPTION_KEYS: TEST_KEY_ENCRYPTION_KEYS,
  }
  const run = await runBlock(block, { cwd: ROOT, env: { ...settings, ...env } })
  expect(printedLines(block).length).toBeGreaterThan(0)
  expect({ exitCode: run.exitCode, lines: shownLines(run.output, asInTheDocs) }).toEqual({
    exitCode: 0,
    lines: printedLines(block),
  })
}

test("feed.md: feed status prints the stream's last position beside the log's head", async () => {
  // given the feed has published the four plants
  await service.feed?.waitFor(4)
  const block = await blockOf('docs/feed.md', 'feed status')
  // when it runs as written, on the test's stream; then
  await runAsShown(block, feedOf(service), [
    [new RegExp(String(service.env.EVENTS_NATS_STREAM), 'g'), 'PLANT_STORE'],
    [/\b4\b/g, '1042'],
  ])
}, 60_000)

test('erasure.md: owners erase says where the erased bytes may stay, then how many plants the owner had', async () => {
  const block = await blockOf('docs/erasure.md', 'owners erase alice')
  // when alice is erased as written, beside the service and its feed; then
  await runAsShown(block, feedOf(service), [])
}, 60_000)

test("keys.md: keys rotate re-wraps every owner's key under the new key-encryption key", async () => {
  // given the store's keys wrapped under the test's key, the docs' OLD_KEK (bob's and carol's; alice is erased)
  const block = await blockOf('docs/keys.md', 'keys rotate')
  const shownId = /key-encryption key ([0-9a-f]{8})/.exec(block)?.[1] ?? ''
  // when the rotation runs as written; then
  await runAsShown(block, { OLD_KEK: TEST_KEY_ENCRYPTION_KEYS }, [
    [/key-encryption key [0-9a-f]{8}/g, `key-encryption key ${shownId}`],
  ])
}, 60_000)

function feedOf({ env }: Service): Record<string, string> {
  const { EVENTS_NATS_URL = '', EVENTS_NATS_STREAM = '', EVENTS_NATS_SUBJECT_PREFIX = '' } = env
  return { EVENTS_NATS_URL, EVENTS_NATS_STREAM, EVENTS_NATS_SUBJECT_PREFIX }
}
