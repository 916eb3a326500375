import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DENO } from '../support/deno.ts'
import { docSection } from '../support/readme.ts'
import { startService } from '../support/service.ts'

const ROOT = new URL('../..', import.meta.url).pathname
// Where the doc's commands put the tarball; the scratch folder stands for it.
const PACKAGES = '~/packages'

// A user's install, done as docs/testing.md says: the tarball packed in this repository, added to
// a project that `bun init` made outside it, the doc's example tests written there, type-checked
// by `tsc` with bun init's tsconfig and run by `bun test`.
let scratch: string
let packages: string
let project: string
let tarball: string[]
beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'plant-store-user-'))
  // As a project folder usually is: as root, PostgreSQL runs as its own user, which reads the
  // binaries in the project's node_modules.
  await chmod(scratch, 0o755)
  packages = join(scratch, 'packages')
  project = join(scratch, 'my-project')
  await Bun.$`mkdir -p ${packages} ${project}`
  const made = await run('bun init --yes', project)
  expect({ exitCode: made.exitCode, stderr: made.exitCode === 0 ? '' : made.stderr }).toEqual({
    exitCode: 0,
    stderr: '',
  })
}, 60_000)
afterAll(async () => {
  await rm(scratch, { recursive: true, force: true })
})

// Every route through the typed client, over a port, with the types: what a user's type check
// must accept, and what it must refuse.
const ENTRIES_TEST = `import { expect, test } from 'bun:test'
import { createPlantStoreClient } from 'plant-store/client'
import { createInMemoryStore } from 'plant-store/test-store'
import type { FeedMessage, PlantAnswer, PlantChangeEvent } from 'plant-store/types'

test('every route through the typed client, and the types', async () => {
  const store = await createInMemoryStore()
  const server = Bun.serve({ port: 0, fetch: (request) => store.app.handle(request) })
  try {
    const api = createPlantStoreClient(server.url.origin, { token: await store.tokenFor('ann') })
    expect((await api.health.get()).data).toEqual({ status: 'ok' })
    expect((await api.ready.get()).status).toBe(200)
    const created = await api.plants.post({ id: 9007199254740993n, name: 'Fern' })
    expect(created.status).toBe(200)
    const position: string = created.response.headers.get('plant-store-position') ?? ''
    const plants: PlantAnswer[] | null = (await api.plants.get({ headers: { 'plant-store-position': BigInt(position) } })).data
    expect(plants).toEqual([{ name: 'Fern' }])
    expect((await api.plants.get({ query: { limit: 1 }, headers: { 'plant-store-position': position } })).status).toBe(200)
    const changes = await api.plants.changes.get({ query: { after: BigInt(position) - 1n } })
    const events: PlantChangeEvent[] = []
    for await (const event of changes.data ?? []) {
      events.push(event)
      break
    }
    expect(events).toEqual([{ id: position, event: 'PlantCreated', data: { id: '9007199254740993', name: 'Fern' } }])
    expect((await api.metrics.get()).status).toBe(200)
    expect((await api['openapi.json'].get()).status).toBe(200)
    // @ts-expect-error a position is never a number
    await api.plants.changes.get({ query: { after: 1 } })
    const erased: FeedMessage = { specversion: '1.0', id: '2', source: 's', type: 'OwnerErased', time: 't', owner: 'ann' }
    expect(erased.type).toBe('OwnerErased')
  } finally {
    server.stop(true)
    await store.close()
  }
})
`

// A Node project's and a Deno program's use of the client, on a service whose URL and token they
// are given: one create, a listing after its position, and its event from the change stream.
const CLIENT_PROGRAM = `import { createPlantStoreClient } from 'plant-store/client'
import type { PlantChangeEvent } from 'plant-store/types'

const [url, token] = ['SERVICE_URL', 'SERVICE_TOKEN']
const api = createPlantStoreClient(url, { token })
const created = await api.plants.post({ id: 9007199254740993n, name: 'Fern' })
const position = created.response.headers.get('plant-store-position') ?? ''
const listed = await api.plants.get({ headers: { 'plant-store-position': BigInt(position) } })
const changes = await api.plants.changes.get({ query: { after: BigInt(position) - 1n } })
const events: PlantChangeEvent[] = []
for await (const event of changes.data ?? []) {
  events.push(event)
  break
}
console.log(JSON.stringify({ created: created.status, listed: listed.data, events, position }))
`

async function run(line: string, cwd: string) {
  const [command = '', ...args] = line.replaceAll(PACKAGES, packages).split(/\s+/)
  const child = Bun.spawn([command, ...args], { cwd, stdout: 'pipe', stderr: 'pipe' })
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ])
  return { exitCode, stdout, stderr }
}

// The lines of the doc's first `sh` block, by the comment above each: where it runs.
async function installSteps(): Promise<{ where: string; line: string }[]> {
  const block = /```sh\n([\s\S]*?)```/.exec(await docSection('Installing it'))?.[1] ?? ''
  const steps: { where: string; line: string }[] = []
  let where = ''
  for (const line of block.split('\n').filter(Boolean)) {
    if (line.startsWith('#')) where = line
    else steps.push({ where, line })
  }
  return steps
}

test('given the doc, when a user packs, installs and runs the example, then its tests pass', async () => {
  // given the doc's two steps: one in the clone, one in the user's project
  const steps = await installSteps()
  expect(steps.map(({ where }) => where.includes('clone'))).toEqual([true, false])
  // when
  for (const { where, line } of steps) {
    const done = await run(line, where.includes('clone') ? ROOT : project)
    expect({ line, exitCode: done.exitCode, stderr: done.exitCode === 0 ? '' : done.stderr }).toEqual({
      line,
      exitCode: 0,
      stderr: '',
    })
  }
  tarball = await readdir(packages)
  const example = /```ts\n([\s\S]*?)```/.exec(await docSection('In process: `createInMemoryStore`'))?.[1]
  expect(example).toContain("from 'plant-store/test-store'")
  await writeFile(join(project, 'store.test.ts'), example ?? '')
  const client = /```ts\n([\s\S]*?)```/.exec(await docSection('The typed client'))?.[1]
  expect(client).toContain('9007199254740993n')
  await writeFile(join(project, 'client.test.ts'), client ?? '')
  // and the other entry points, the client called on the store's app through a port
  await writeFile(join(project, 'entries.test.ts'), ENTRIES_TEST)
  const checked = await run('bunx tsc --noEmit', project)
  // (the first store of a file pays a server's start: a busy machine's needs the docs' longer timeout)
  const tested = await run('bun test --timeout 30000', project)
  // then
  expect({ tsc: checked.stdout + checked.stderr, exitCode: checked.exitCode }).toEqual({
    tsc: '',
    exitCode: 0,
  })
  expect(tested.stderr).toContain(' 5 pass\n')
  expect(tested.exitCode).toBe(0)
}, 300_000)

test('the tarball holds the source, the compiled package, the migrations and the licence: no tests, docs, benches or data', async () => {
  // given the tarball the doc's first step made
  expect(tarball).toEqual(['plant-store-1.0.0.tgz'])
  // when
  const listed = await run(`tar -tzf ${join(packages, 'plant-store-1.0.0.tgz')}`, scratch)
  // then
  const files = listed.stdout
    .split('\n')
    .filter(Boolean)
    .map((file) => file.replace(/^package\//, ''))
  const elsewhere = files.filter((file) => !/^(src|dist|db\/migrations)\//.test(file))
  expect(elsewhere.sort()).toEqual(['LICENSE', 'README.md', 'package.json'])
  expect(files.filter((file) => /\.test\.ts$|(^|\/)(data|\.git|test|docs)\//.test(file))).toEqual([])
  expect(files).toContain('db/migrations/meta/_journal.json')
  const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, string | Record<string, string>>
  }
  const targets = Object.values(manifest.exports).flatMap((target) =>
    typeof target === 'string' ? [target] : Object.values(target),
  )
  for (const target of targets) expect(files).toContain(target.replace(/^\.\//, ''))
  // and every entry point has its compiled JavaScript and its declarations
  for (const entry of ['client', 'types', 'test-store'])
    expect(files).toEqual(expect.arrayContaining([`dist/${entry}.js`, `dist/${entry}.d.ts`]))
})

// A project of another runtime: the tarball added to it, and the client program written into it,
// for the service at `url` with `token`.
async function projectOf(runtime: string, files: Record<string, string>, url: string, token: string) {
  const folder = join(scratch, `${runtime}-project`)
  await Bun.$`mkdir -p ${folder}`
  await writeFile(
    join(folder, 'package.json'),
    JSON.stringify({ name: `${runtime}-user`, type: 'module', private: true }),
  )
  for (const [name, text] of Object.entries(files)) await writeFile(join(folder, name), text)
  const program = CLIENT_PROGRAM.replace('SERVICE_URL', url).replace('SERVICE_TOKEN', token)
  await writeFile(join(folder, 'program.ts'), program)
  return folder
}

function expectRanAgainstTheService(said: { exitCode: number; stdout: string; stderr: string }) {
  expect({ exitCode: said.exitCode, stderr: said.stderr }).toEqual({ exitCode: 0, stderr: '' })
  const { created, listed, events, position } = JSON.parse(said.stdout) as {
    created: number
    listed: unknown
    events: unknown
    position: string
  }
  expect({ created, listed, events }).toEqual({
    created: 200,
    listed: [{ name: 'Fern' }],
    events: [{ id: position, event: 'PlantCreated', data: { id: '9007199254740993', name: 'Fern' } }],
  })
}

test('a Node project imports the compiled client, type-checks it with tsc (nodenext) and calls a real service', async () => {
  // given a service, and a Node project with the tarball and TypeScript
  const service = await startService({ label: 'node_user' })
  try {
    const folder = await projectOf(
      'node',
      { 'tsconfig.json': NODE_TSCONFIG },
      service.url,
      await service.tokenFor('nora'),
    )
    const added = await run(`bun add ${join(packages, 'plant-store-1.0.0.tgz')} typescript@5.9.3`, folder)
    expect({ exitCode: added.exitCode, stderr: added.exitCode === 0 ? '' : added.stderr }).toEqual({
      exitCode: 0,
      stderr: '',
    })
    // when it is type-checked and compiled by tsc, then run by node
    const compiled = await run('node_modules/.bin/tsc -p .', folder)
    expect({ tsc: compiled.stdout + compiled.stderr, exitCode: compiled.exitCode }).toEqual({
      tsc: '',
      exitCode: 0,
    })
    // then it created, listed and followed its plant exactly
    expectRanAgainstTheService(await run('node out/program.js', folder))
  } finally {
    await service.stop()
  }
}, 300_000)

test('a Deno program imports the compiled client, passes deno check and calls a real service', async () => {
  // given a service, and a Deno program beside a node_modules that holds the tarball
  const service = await startService({ label: 'deno_user' })
  try {
    const folder = await projectOf(
      'deno',
      { 'deno.json': '{ "nodeModulesDir": "manual" }' },
      service.url,
      await service.tokenFor('dina'),
    )
    const added = await run(`bun add ${join(packages, 'plant-store-1.0.0.tgz')}`, folder)
    expect(added.exitCode).toBe(0)
    // when it is checked, then run
    const checked = await run(`${DENO} check program.ts`, folder)
    expect({
      exitCode: checked.exitCode,
      errors: checked.stderr.split('\n').filter((line) => /error/i.test(line)),
    }).toEqual({
      exitCode: 0,
      errors: [],
    })
    // then it created, listed and followed its plant exactly
    expectRanAgainstTheService(await run(`${DENO} run --allow-net --allow-read program.ts`, folder))
  } finally {
    await service.stop()
  }
}, 300_000)

// A Node project's settings as `tsc --init` writes them for Node: ES modules resolved as Node does.
const NODE_TSCONFIG = JSON.stringify({
  compilerOptions: {
    module: 'nodenext',
    target: 'esnext',
    lib: ['esnext', 'dom'],
    strict: true,
    skipLibCheck: true,
    outDir: 'out',
  },
  include: ['program.ts'],
})

// What an editor shows on hovering an import: every export of an entry point has a doc comment.
test('every export of the entry points has a /** */ comment', async () => {
  const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, string | { bun: string }>
  }
  expect(Object.keys(manifest.exports)).not.toContain('./src/*')
  const undocumented: string[] = []
  const sources = Object.values(manifest.exports).flatMap((target) =>
    typeof target === 'string' ? [] : [target.bun],
  )
  expect(sources).toHaveLength(3)
  for (const target of sources) {
    const lines = (await readFile(join(ROOT, target), 'utf8')).split('\n')
    lines.forEach((line, index) => {
      if (!/^export /.test(line)) return
      const before = lines.slice(0, index).reverse()
      const comment = before.findIndex((above) => !above.startsWith(' *') && !above.startsWith('/**'))
      const above = before.slice(0, comment === -1 ? before.length : comment)
      if (!above.some((text) => text.startsWith('/**'))) undocumented.push(`${target}: ${line}`)
    })
  }
  expect(undocumented).toEqual([])
})
