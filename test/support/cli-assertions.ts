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
