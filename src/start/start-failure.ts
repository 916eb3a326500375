import { unreachableDatabase } from '../shared/database-error.ts'
import { diskFull } from '../shared/disk-full.ts'
import { isFailure } from '../shared/errors.ts'

// What the file system says when the start may not write somewhere (Bun's codes, Deno's classes),
// or has no room left to.
const FILE_CODES = new Set(['EACCES', 'EPERM', 'EROFS'])

// The one line that says why a start stopped (one per bad setting), for a failure the operator can
// act on; undefined for anything else, which is a bug and keeps its stack.
export function startFailureLine(error: unknown): string | undefined {
  if (isFailure(error))
    return error.message
      .split('\n')
      .map((line) => `plant store cannot start: ${line}`)
      .join('\n')
  if (!(error instanceof Error)) return undefined
  // A database or a pooler that refused the connection, met on the start's first statement.
  const database = unreachableDatabase(error)
  if (database) return `plant store cannot start: ${database.message}`
  // A permission Deno was not given (--allow-read, --allow-write, --allow-run…): its message names it.
  if (error.name === 'NotCapable')
    return `plant store cannot start: Deno was not given a permission the start needs: ${firstLine(error.message)}`
  const { code, path } = error as { code?: unknown; path?: unknown }
  const refused = (typeof code === 'string' && FILE_CODES.has(code)) || error.name === 'PermissionDenied'
  if (refused || diskFull(error))
    return `plant store cannot start: ${typeof path === 'string' ? `${path}: ` : ''}${firstLine(error.message)}`
  return undefined
}

function firstLine(text: string): string {
  return (text.split('\n')[0] ?? '').trim()
}
