import { afterAll, beforeAll, expect, test } from 'bun:test'
import { chmod, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { docSection } from '../support/readme.ts'

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

const ENTRIES_TEST = `import { expect, test } from 'bun:test'
import { createPlantStoreClient } from 'plant-store/client'
import { createInMemoryStore } from 'plant-store/test-store'
import type { FeedMessage, PlantAnswer } from 'plant-store/types'

test('the typed client and the types', async () => {
  const store = await createInMemoryStore()
  const server = Bun.serve({ port: 0, fetch: (request) => store.app.handle(request) })
  try {
    const api = createPlantStoreClient(server.url.origin, { token: await store.tokenFor('ann') })
    expect((await api.plants.post({ id: 1, name: 'Fern' })).status).toBe(200)
    const plants: PlantAnswer[] | null = (await api.plants.get()).data
    expect(plants).toEqual([{ name: 'Fern' }])
    const erased: FeedMessage = { specversion: '1.0', id: '2', source: 's', type: 'OwnerErased', time: 't', owner: 'ann' }
    expect(erased.type).toBe('OwnerErased')
  } finally {
    server.stop(true)
    await store.close()
  }
})
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
  const tested = await run('bun test', project)
  // then
  expect({ tsc: checked.stdout + checked.stderr, exitCode: checked.exitCode }).toEqual({
    tsc: '',
    exitCode: 0,
  })
  expect(tested.stderr).toContain(' 5 pass\n')
  expect(tested.exitCode).toBe(0)
}, 120_000)

test('the tarball holds the source, the migrations and the licence: no tests, docs, benches or data', async () => {
  // given the tarball the doc's first step made
  expect(tarball).toEqual(['plant-store-1.0.0.tgz'])
  // when
  const listed = await run(`tar -tzf ${join(packages, 'plant-store-1.0.0.tgz')}`, scratch)
  // then
  const files = listed.stdout
    .split('\n')
    .filter(Boolean)
    .map((file) => file.replace(/^package\//, ''))
  const elsewhere = files.filter((file) => !file.startsWith('src/') && !file.startsWith('db/migrations/'))
  expect(elsewhere.sort()).toEqual(['LICENSE', 'README.md', 'package.json'])
  expect(files.filter((file) => /\.test\.ts$|(^|\/)(data|\.git|test|docs)\//.test(file))).toEqual([])
  expect(files).toContain('db/migrations/meta/_journal.json')
  const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, string>
  }
  for (const target of Object.values(manifest.exports)) expect(files).toContain(target.replace(/^\.\//, ''))
})

// What an editor shows on hovering an import: every export of an entry point has a doc comment.
test('every export of the entry points has a /** */ comment', async () => {
  const manifest = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
    exports: Record<string, string>
  }
  expect(Object.keys(manifest.exports)).not.toContain('./src/*')
  const undocumented: string[] = []
  for (const target of Object.values(manifest.exports).filter((path) => path.endsWith('.ts'))) {
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
