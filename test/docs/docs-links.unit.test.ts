import { expect, test } from 'bun:test'
import { readdir, readFile, stat } from 'node:fs/promises'
import { dirname, join, normalize } from 'node:path'
import { type DocFile, docFiles, headingsOf } from '../support/readme.ts'

const ROOT = new URL('../..', import.meta.url).pathname

// A heading's anchor as GitHub makes it: lower case, punctuation dropped, spaces as hyphens, and
// `-1`, `-2`… after a heading's second and later occurrences.
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  for (const { title } of headingsOf(text)) {
    const slug = title
      .toLowerCase()
      .replace(/`/g, '')
      .replace(/[^\p{L}\p{N} _-]/gu, '')
      .replace(/ /g, '-')
    const times = seen.get(slug) ?? 0
    seen.set(slug, times + 1)
    anchors.add(times === 0 ? slug : `${slug}-${times}`)
  }
  return anchors
}

// The relative links of a page, outside its code blocks and code spans: `[text](target)`.
function linksOf(text: string): string[] {
  let fenced = false
  const links: string[] = []
  for (const line of text.split('\n')) {
    if (line.trimStart().startsWith('```')) fenced = !fenced
    if (fenced) continue
    for (const [, target = ''] of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)\)/g))
      if (!/^[a-z]+:/.test(target)) links.push(target)
  }
  return links
}

async function exists(path: string): Promise<boolean> {
  return stat(join(ROOT, path)).then(
    () => true,
    () => false,
  )
}

// What is wrong with a page's relative links: a file that is not there, or a heading that is not.
async function brokenLinks(page: DocFile, pages: DocFile[]): Promise<string[]> {
  const broken: string[] = []
  for (const link of linksOf(page.text)) {
    const [file = '', anchor] = link.split('#')
    const path = file === '' ? page.path : normalize(join(dirname(page.path), file))
    if (!(await exists(path))) {
      broken.push(`${page.path}: ${link} (no such file)`)
      continue
    }
    if (anchor === undefined) continue
    const target = pages.find((candidate) => candidate.path === path)
    if (!target || !anchorsOf(target.text).has(anchor)) broken.push(`${page.path}: ${link} (no such heading)`)
  }
  return broken
}

test('given the README and docs/, when every relative link is followed, then each reaches a file and heading', async () => {
  const pages = await docFiles()
  expect(pages.map(({ path }) => path)).toContain('docs/api.md')
  const broken = (await Promise.all(pages.map((page) => brokenLinks(page, pages)))).flat()
  expect(broken).toEqual([])
})

// The product's rules are stated in the repository's own words: nothing names the document they
// came from, its sections, the style guide or issues that live elsewhere. RFC sections are cited.
const OUTSIDE = new RegExp(
  [
    'CONTRACT',
    'STYLE\\.md',
    '\\bthe contract\\b',
    'plant-store-spec',
    '(?<![\\w.]/)\\bshared/',
    '/work/shared',
    '(?<!RFC \\d+ )§ ?\\d',
    '\\bissues? #?\\d+',
    '(?<![\\w&])#\\d+\\b',
  ].join('|'),
  'i',
)
const SOURCE = /\.(ts|js|md|json|sh|sql|txt)$|^\.ci\/run$/
// This file spells the pattern out.
const CHECK = 'test/docs/docs-links.unit.test.ts'

async function sourceFiles(): Promise<DocFile[]> {
  const files: DocFile[] = []
  for (const folder of ['src', 'test', '.ci']) {
    for (const name of await readdir(join(ROOT, folder), { recursive: true })) {
      const path = `${folder}/${name}`
      if (SOURCE.test(path) && path !== CHECK)
        files.push({ path, text: await readFile(join(ROOT, path), 'utf8') })
    }
  }
  return files
}

function outsideMentions(files: DocFile[]): string[] {
  return files.flatMap(({ path, text }) =>
    text
      .split('\n')
      .map((line, index) => ({ line, index }))
      .filter(({ line }) => OUTSIDE.test(line))
      .map(({ line, index }) => `${path}:${index + 1}: ${line.trim()}`),
  )
}

test('given the README, docs/, src/, test/ and .ci/, then none points outside the repository at the spec, its rules or issues', async () => {
  const files = [...(await docFiles()), ...(await sourceFiles())]
  expect(files.map(({ path }) => path)).toContain('src/start/main.ts')
  expect(outsideMentions(files)).toEqual([])
})

test('given lines that name the spec, a section of it, the style guide or an issue, then each is found; paths and RFCs are not', () => {
  const lines = [
    'as CONTRACT §3 says',
    'see STYLE.md',
    'the shape the contract gives',
    'rules in /work/shared/ for all',
    'fixed in issue 15',
    'since #26',
    'import { x } from "../shared/errors.ts"',
    'src/shared/logger.ts',
    'RFC 9110 §8.8.1',
    '&#39; and color #fff',
  ]
  expect(lines.map((line) => OUTSIDE.test(line))).toEqual([
    true,
    true,
    true,
    true,
    true,
    true,
    false,
    false,
    false,
    false,
  ])
})

// What the benches write, never committed (.gitignore).
const WRITTEN = 'test/bench/results/'

// The repository's paths a page names in code spans: `src/…`, `test/…` and the like.
function pathsOf(text: string): string[] {
  const paths: string[] = []
  for (const [, span = ''] of text.matchAll(/`([^`\s]+)`/g))
    if (/^(src|test|db|docs|patches|\.ci)\/[\w./@-]*$/.test(span) && !span.startsWith(WRITTEN))
      paths.push(span)
  return paths
}

test('given the README and docs/, then every path of the repository they name is there', async () => {
  const missing: string[] = []
  for (const page of await docFiles())
    for (const path of pathsOf(page.text)) if (!(await exists(path))) missing.push(`${page.path}: ${path}`)
  expect(missing).toEqual([])
})

test('given headings, then their anchors are the ones GitHub makes', () => {
  const text =
    "# Plant Store\n## Reads: where a page's CPU goes\n```sh\n# not a heading\n```\n## `304`s\n## Reads: where a page's CPU goes"
  expect([...anchorsOf(text)]).toEqual([
    'plant-store',
    'reads-where-a-pages-cpu-goes',
    '304s',
    'reads-where-a-pages-cpu-goes-1',
  ])
})
