import { readFile } from 'node:fs/promises'

// The README's examples, taken from the README itself so that a test runs them as written.
const README = new URL('../../README.md', import.meta.url)

// The code block of `section` (its `## ` heading) in `language` that contains `containing`.
export async function readmeBlock(section: string, containing: string, language = 'sh'): Promise<string> {
  const readme = await readFile(README, 'utf8')
  const start = readme.indexOf(`\n## ${section}\n`)
  if (start === -1) throw new Error(`the README has no section "${section}"`)
  const end = readme.indexOf('\n## ', start + 1)
  const text = readme.slice(start, end === -1 ? undefined : end)
  for (const [, block = ''] of text.matchAll(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``, 'g')))
    if (block.includes(containing)) return block
  throw new Error(`the README's "${section}" has no ${language} block with "${containing}"`)
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
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', ...env },
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

// Whether `output` holds `lines` in this order (other lines may come between).
export function holdsInOrder(output: string, lines: string[]): boolean {
  let from = 0
  for (const line of lines) {
    const at = output.indexOf(line, from)
    if (at === -1) return false
    from = at + line.length
  }
  return true
}
