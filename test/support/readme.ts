import { readdir, readFile } from 'node:fs/promises'
import { withoutProgress } from './cli-assertions.ts'
import { plainEnv } from './server-process.ts'

// The docs' examples, taken from the docs themselves (README.md and docs/*.md) so that a test runs
// them as written, wherever a page moves them.
const ROOT = new URL('../../', import.meta.url)

export type DocFile = { path: string; text: string }

// README.md and every page under docs/ (runs included), by their path from the repository's root.
export async function docFiles(): Promise<DocFile[]> {
  const pages = (await readdir(new URL('docs/', ROOT), { recursive: true }))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`)
  return Promise.all(
    ['README.md', ...pages].map(async (path) => ({
      path,
      text: await readFile(new URL(path, ROOT), 'utf8'),
    })),
  )
}

// The headings of a Markdown text outside its code blocks: level, text, and the line they are on.
export function headingsOf(text: string): { level: number; title: string; line: number }[] {
  const headings: { level: number; title: string; line: number }[] = []
  let fenced = false
  text.split('\n').forEach((line, index) => {
    if (line.trimStart().startsWith('```')) fenced = !fenced
    const heading = fenced ? null : /^(#{1,6}) (.+)$/.exec(line)
    if (heading) headings.push({ level: heading[1]?.length ?? 0, title: heading[2] ?? '', line: index })
  })
  return headings
}

// The text under the heading `section` in the README or a page of docs/, up to the next heading of
// the same or a higher level. Where several pages have that heading, the highest one (a page's
// title) is taken, then the first page.
export async function docSection(section: string): Promise<string> {
  const found: { level: number; text: string }[] = []
  for (const { text } of await docFiles()) {
    const headings = headingsOf(text)
    const lines = text.split('\n')
    headings.forEach((heading, at) => {
      if (heading.title !== section) return
      const next = headings.slice(at + 1).find(({ level }) => level <= heading.level)
      found.push({
        level: heading.level,
        text: lines.slice(heading.line, next?.line ?? lines.length).join('\n'),
      })
    })
  }
  const best = found.sort((a, b) => a.level - b.level)[0]
  if (!best) throw new Error(`no page of the docs has a section "${section}"`)
  return best.text
}

// The code block of `section` in `language` that contains `containing`.
export async function readmeBlock(section: string, containing: string, language = 'sh'): Promise<string> {
  const text = await docSection(section)
  for (const [, block = ''] of text.matchAll(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``, 'g')))
    if (block.includes(containing)) return block
  throw new Error(`the docs' "${section}" has no ${language} block with "${containing}"`)
}

// The lines a block says its commands print: its lines that are comments from the first column,
// without the `# `.
export function printedLines(block: string): string[] {
  return block
    .split('\n')
    .filter((line) => line.startsWith('#'))
    .map((line) => line.replace(/^# ?/, ''))
}

export type BlockRun = { exitCode: number; output: string }

export type BlockOptions = {
  cwd: string
  env?: Record<string, string>
  // The README's placeholders (a host, a database name) and the test's values for them.
  replace?: Record<string, string>
  // For a block that ends in a server: once the output satisfies this, the block's processes are
  // sent SIGTERM (as Ctrl-C would stop them) and the run ends.
  stopWhen?: (output: string) => boolean
}

// Runs a shell block with `sh -e` (the first failing command stops it) in `cwd`, with `env` on top
// of this process's PATH and HOME; nothing but the placeholders is changed. stdout and stderr are
// one output, as a terminal shows them.
export async function runBlock(
  block: string,
  { cwd, env = {}, replace = {}, stopWhen }: BlockOptions,
): Promise<BlockRun> {
  let script = block
  for (const [placeholder, value] of Object.entries(replace)) script = script.replaceAll(placeholder, value)
  const child = Bun.spawn(['sh', '-ec', `exec 2>&1\n${script}`], {
    cwd,
    env: plainEnv(env),
    stdin: 'ignore',
    stdout: 'pipe',
    stderr: 'pipe',
    // A group of its own, so that stopping it reaches the server the block started.
    detached: true,
  })
  const stopGroup = () => {
    try {
      process.kill(-child.pid, 'SIGTERM')
    } catch {
      // the group has already ended
    }
  }
  const timer = setTimeout(stopGroup, 60_000)
  let output = ''
  const decoder = new TextDecoder()
  const reader = child.stdout.getReader()
  for (let read = await reader.read(); !read.done; read = await reader.read()) {
    output += decoder.decode(read.value, { stream: true })
    if (stopWhen?.(output)) stopGroup()
  }
  const exitCode = await child.exited
  clearTimeout(timer)
  return { exitCode, output }
}

// The lines `output` holds, each value that differs from run to run (a key's id, a stream's name)
// written as the docs write it: what a block printed, to compare line for line with printedLines.
// A long command's progress, which only a busy machine makes it report there, is left out.
export function shownLines(output: string, asInTheDocs: [string | RegExp, string][] = []): string[] {
  let text = withoutProgress(output).trimEnd()
  for (const [value, shown] of asInTheDocs) text = text.replaceAll(value, shown)
  return text === '' ? [] : text.split('\n')
}
