import { expect } from 'bun:test'

// That a CLI run succeeded, saying which command failed and all it printed when it did not.
export function expectCliSucceeded(
  args: string[],
  run: { exitCode: number; stdout: string; stderr: string },
): void {
  expect({
    args,
    exitCode: run.exitCode,
    output: run.exitCode === 0 ? '' : `${run.stdout}${run.stderr}`,
  }).toEqual({ args, exitCode: 0, output: '' })
}

// What a long command reports of its progress on stderr once its work has taken 2 s (a plain line
// when stderr is no terminal: docs/operating.md, The event log), which a busy machine may reach
// on the smallest store: the text without those lines.
export function withoutProgress(text: string): string {
  return text.replace(/^(export|import|keys rotate|rebuild|verify): (\d|checking them|log folded).*\n/gm, '')
}
