import { isFailure } from '../shared/errors.ts'

// The one line that says why a start stopped, for a failure the operator can act on; undefined for
// anything else, which is a bug and keeps its stack.
export function startFailureLine(error: unknown): string | undefined {
  if (isFailure(error)) return `plant store cannot start: ${error.message}`
  return undefined
}
