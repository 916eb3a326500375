import { expect, test } from 'bun:test'
import { existsSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { dirname, join, normalize } from 'node:path'
import { Glob } from 'bun'

const ROOT = new URL('../..', import.meta.url).pathname

// The repository's own folders: a name that starts with one is read from the repository's root.
const ROOTED = /^(src|test|db|docs|patches|\.ci|node_modules)\//
// A file's name: what a comment names when it points at code, a fixture or a page.
const FILE = /\.(ts|js|md|sql|json|sh|patch)$/
// A word with a slash in it that is not a URL's, a package's (`@scope/name`) or an absolute path's.
const SLASHED = /(?<![\w@/:.-])[\w.-]+\/[\w.*@/-]*/g

// The comment of a line of code, if it has one: `// …`, a block comment's `* …`, SQL's `-- …` and
// the shell's `# …`.
export function commentOf(path: string, line: string): string | null {
  const code = line.trimStart()
  const shell = path.endsWith('.sh') || path === '.ci/run'
  if (shell) return code.startsWith('#') ? code : null
  if (path.endsWith('.sql')) return code.startsWith('--') ? code : null
  if (/^(\/\/|\/\*|\*)/.test(code)) return code
  const trailing = line.indexOf(' // ')
  return trailing === -1 ? null : line.slice(trailing)
}

// The paths of the repository a comment names: `src/database/database.ts`, `database/database.ts` (from
// src/), a fixture's `README.md` in `fixtures/` (from the file's folder), `event-log/*.ts`, `test/failover/`.
export function pathsNamed(comment: string): string[] {
  return [...comment.matchAll(SLASHED)]
    .map(([word]) => word.replace(/[.,:;)]+$/, ''))
    .filter((word) => ROOTED.test(word) || FILE.test(word))
}

function matches(pattern: string): boolean {
  if (!pattern.includes('*')) return existsSync(join(ROOT, pattern))
  const folder = pattern.slice(0, pattern.lastIndexOf('/', pattern.indexOf('*')))
  if (!existsSync(join(ROOT, folder))) return false
  const rest = pattern.slice(folder.length + 1)
  return new Glob(rest).scanSync({ cwd: join(ROOT, folder), onlyFiles: false }).next().done === false
}

// Whether a path named in `file` is there: from the root when it starts with a folder of the
// repository, else from src/ or from the file's own folder.
export function resolves(named: string, file: string): boolean {
  if (ROOTED.test(named)) return matches(named)
  return [join('src', named), normalize(join(dirname(file), named))].some(matches)
}

// Every path named in the comments of a text that is not there, as `file:line: path`.
export function missingPaths(path: string, text: string): string[] {
  return text.split('\n').flatMap((line, index) => {
    const comment = commentOf(path, line)
    if (comment === null) return []
    return pathsNamed(comment)
      .filter((named) => !resolves(named, path))
      .map((named) => `${path}:${index + 1}: ${named}`)
  })
}

const SOURCE = /\.(ts|js|sh|sql)$|^\.ci\/run$/
// This file spells bad examples out.
const CHECK = 'test/docs/comment-paths.unit.test.ts'

test('given the comments of src/, test/ and .ci/, then every path of the repository they name is there', async () => {
  const missing: string[] = []
  let read = 0
  for (const folder of ['src', 'test', '.ci'])
    for (const name of await readdir(join(ROOT, folder), { recursive: true })) {
      const path = `${folder}/${name}`
      if (!SOURCE.test(path) || path === CHECK) continue
      read += 1
      missing.push(...missingPaths(path, await readFile(join(ROOT, path), 'utf8')))
    }
  expect(read).toBeGreaterThan(300)
  expect(missing).toEqual([])
})

test('given comments that name files gone or moved, then each is found; paths that are there, URLs and packages are not', () => {
  const text = [
    "import { x } from '../log/append.ts'",
    '// the lock of log/work-tables.ts, as src/event-log/append.ts takes it',
    '// the readers of log/*.ts and of event-log/*.ts',
    '  * a test under test/gone/ and one in test/embedded/, fixtures in fixtures/README.md',
    "const url = 'https://example.com/src/gone.ts' // see database/database.ts, not store/gone.ts.",
    '// @elysiajs/openapi, HTTP/1.1, I/O, /proc/self/status and docs/*.md',
  ].join('\n')
  expect(missingPaths('test/embedded/example.ts', text)).toEqual([
    'test/embedded/example.ts:2: log/work-tables.ts',
    'test/embedded/example.ts:3: log/*.ts',
    'test/embedded/example.ts:4: test/gone/',
    'test/embedded/example.ts:5: store/gone.ts',
  ])
})

test('given a shell script and SQL, then their comments are read and their code is not', () => {
  expect(missingPaths('.ci/run', 'bun src/gone.ts\n# runs src/gone.ts')).toEqual(['.ci/run:2: src/gone.ts'])
  expect(missingPaths('db/x.sql', "select 'src/gone.ts';\n-- from src/gone.ts")).toEqual([
    'db/x.sql:2: src/gone.ts',
  ])
})
