import { expect, test } from 'bun:test'
import { stat } from 'node:fs/promises'
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

test('given the README and docs/, then none points outside the repository at the spec or its rules', async () => {
  const outside = /CONTRACT|(?<!\w\/)shared\/|plant-store-spec/
  const mentions = (await docFiles()).flatMap(({ path, text }) =>
    text
      .split('\n')
      .filter((line) => outside.test(line))
      .map((line) => `${path}: ${line}`),
  )
  expect(mentions).toEqual([])
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
