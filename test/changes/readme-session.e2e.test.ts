import { afterAll, beforeAll, expect, test } from 'bun:test'
import { postPlant } from '../support/plant-client.ts'
import { docSection } from '../support/readme.ts'
import { plainEnv, type ServerProcess } from '../support/server-process.ts'
import { type Service, startService } from '../support/service.ts'

// The README's curl session and its sequel in docs/live-changes.md, run as written against a fresh
// server: every command's output must be the one the docs print under it, so that its ids and
// positions stay true.
type Step = { command: string; output: string[] }

// The shell blocks of a section, as commands each followed by the `# ` lines printed under it.
async function stepsOf(section: string): Promise<Step[]> {
  const text = await docSection(section)
  const steps: Step[] = []
  for (const [, block] of text.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const lines = (block ?? '').split('\n')
    for (let index = 0; index < lines.length; index++) {
      let command = lines[index] ?? ''
      if (!command.startsWith('curl')) continue
      while (command.endsWith('\\')) command = `${command.slice(0, -1)} ${lines[++index]?.trim()}`
      const output: string[] = []
      while (lines[index + 1]?.startsWith('#')) output.push((lines[++index] ?? '').replace(/^# ?/, ''))
      steps.push({ command, output })
    }
  }
  return steps
}

// On PostgreSQL: the session's ids and positions are the same on both storages.
let service: Service
let server: ServerProcess
let token: string
beforeAll(async () => {
  service = await startService({ label: 'readme_session' })
  server = service.server
  token = (await service.cli(['token', 'issue', 'alice', '--ttl', '24h'])).stdout.trim()
}, 120_000)
afterAll(async () => {
  await service?.stop()
})

// Runs a step's command with curl; a stream (-N) is read for `streamMs`.
async function run({ command }: Step, streamMs = 0): Promise<string[]> {
  const address = new URL(server.url).host
  const shell = command
    .replaceAll('localhost:3000', address)
    .replace(/^curl -N /, `curl -N --max-time ${streamMs / 1000} `)
  const child = Bun.spawn(['sh', '-c', shell], {
    env: plainEnv({ TOKEN: token }),
    stdout: 'pipe',
    stderr: 'ignore',
  })
  const text = await new Response(child.stdout).text()
  await child.exited
  return text
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => line.replace(/\r$/, ''))
}

// Header lines compare without regard to the name's case (HTTP header names are case-insensitive).
const normal = (lines: string[]) =>
  lines.map((line) => line.replace(/^[A-Za-z-]+:/, (name) => name.toLowerCase()))

test("the README's curl session and its live changes print what the docs show", async () => {
  const session = await stepsOf('A session with curl')
  const live = await stepsOf('Live changes')
  expect(session.length).toBeGreaterThanOrEqual(5)
  expect(live.length).toBe(3)
  for (const step of session)
    expect({ step: step.command, out: normal(await run(step)) }).toEqual({
      step: step.command,
      out: normal(step.output),
    })
  const [listing, follow, resume] = live as [Step, Step, Step]
  expect(normal(await run(listing))).toEqual(normal(listing.output))
  // the stream, with the create the docs make "meanwhile, in another terminal"
  const meanwhile = follow.output.find((line) => line.includes('meanwhile'))
  const created = JSON.parse(/create (\{.*\})/.exec(meanwhile ?? '')?.[1] ?? 'null')
  const streaming = run(follow, 3000)
  await Bun.sleep(1000)
  expect((await postPlant(server.url, token, created)).status).toBe(200)
  // the docs' notes in parentheses are not output
  const text = (lines: string[]) =>
    lines
      .filter((line) => !line.startsWith('('))
      .join('\n')
      .replace(/\n{3,}/g, '\n\n')
      .trim()
  const shown = follow.output.filter((line) => !line.startsWith('('))
  expect(text(await streaming)).toBe(text(shown))
  // resuming after the last id the stream showed repeats nothing
  const lastId = shown.findLast((line) => line.startsWith('id: '))?.slice(4)
  expect(resume.command).toContain(`Last-Event-ID: ${lastId}`)
  expect((await run(resume, 1500)).filter((line) => line.startsWith('id: '))).toEqual([])
}, 60_000)
