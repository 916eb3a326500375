import process from 'node:process'
import type { ProjectionDiff, ProjectionRow } from '../projection/projection-diff.ts'
import { isInSync } from '../projection/verify-projection.ts'

// Exit 0 with `inSync`, or exit 1 with `drifted` and a readable account of the drift: counts,
// then a few rows of each kind.
export function reportDrift(diff: ProjectionDiff, inSync: string, drifted: string): number {
  if (isInSync(diff)) {
    process.stdout.write(`${inSync}\n`)
    return 0
  }
  const lines = [`${drifted}:`]
  const { missing, extra, changed } = diff
  if (missing.count > 0) {
    lines.push(`missing: ${missing.count} row(s) the log has and the projection lacks, e.g.`)
    lines.push(...missing.examples.map((row) => `  ${describeRow(row)}`))
  }
  if (extra.count > 0) {
    lines.push(`extra: ${extra.count} row(s) in the projection that no event explains, e.g.`)
    lines.push(...extra.examples.map((row) => `  ${describeRow(row)}`))
  }
  if (changed.count > 0) {
    lines.push(`changed: ${changed.count} row(s) whose values differ from the log, e.g.`)
    for (const { expected, actual } of changed.examples) {
      lines.push(`  log:        ${describeRow(expected)}`, `  projection: ${describeRow(actual)}`)
    }
  }
  process.stdout.write(`${lines.join('\n')}\n`)
  return 1
}

function describeRow(row: ProjectionRow): string {
  return `owner=${JSON.stringify(row.owner)} id=${row.id} name=${JSON.stringify(row.name)} tag=${JSON.stringify(row.tag)} position=${row.position}`
}
