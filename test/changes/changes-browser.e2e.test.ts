import { expect, test } from 'bun:test'
import { browsedService } from '../support/browsed-service.ts'
import { tokenHeader } from '../support/plant-client.ts'
import { readmeBlock } from '../support/readme.ts'

const { service, server, browser } = browsedService('changes-browser', 120_000)

test("a page's fetch-based SSE client receives a plant created after it connected", async () => {
  // given a same-origin page following the changes with the docs' client, taken from docs/live-changes.md
  const token = (await service().cli(['token', 'issue', 'browser-user'])).stdout.trim()
  const page = await browser().newPage()
  await page.goto(`${server().url}/docs`)
  await page.evaluate(
    ([client, bearer]) => {
      const state = { plants: [] as unknown[], error: '' }
      ;(window as unknown as { changes: typeof state }).changes = state
      const follow = new Function(`${client}; return followPlants`)() as (
        token: string,
        lastEventId: string | undefined,
        onPlant: (plant: unknown, id: string) => void,
      ) => Promise<string>
      follow(bearer, undefined, (plant, id) => state.plants.push({ plant, id })).catch((error: Error) => {
        state.error = error.message
      })
    },
    [await readmeBlock('Live changes', 'async function followPlants', 'js'), token] as const,
  )
  // and connected: the service counts its stream
  const deadline = Date.now() + 10_000
  while (Date.now() < deadline) {
    const metrics = await (await fetch(`${server().url}/metrics`)).text()
    if (/^plant_store_change_streams 1$/m.test(metrics)) break
    await Bun.sleep(50)
  }
  // when a plant is created
  const created = await fetch(`${server().url}/plants`, {
    method: 'POST',
    headers: { ...tokenHeader(token), 'content-type': 'application/json' },
    body: '{"id":9007199254740993,"name":"Seen in Chromium","tag":""}',
  })
  expect(created.status).toBe(200)
  // then the page receives it, exactly
  await page.waitForFunction(
    () => (window as unknown as { changes: { plants: unknown[] } }).changes.plants.length > 0,
    undefined,
    { timeout: 10_000 },
  )
  const state = await page.evaluate(() => (window as unknown as { changes: unknown }).changes)
  expect(state).toMatchObject({
    error: '',
    plants: [
      {
        plant: { id: '9007199254740993', name: 'Seen in Chromium', tag: '' },
        id: expect.stringMatching(/^[0-9]+$/),
      },
    ],
  })
}, 60_000)
