import type { PlantRow, ProjectionDiff } from '../replay/projection-diff.ts'

// A readable account of drift: counts, then a few rows of each kind.
export function describeDiff({ missing, extra, changed }: ProjectionDiff): string {
  const lines: string[] = []
  if (missing.count > 0) {
    lines.push(`missing: ${missing.count} row(s) the log has and the projection lacks, e.g.`)
    for (const row of missing.examples) lines.push(`  ${describeRow(row)}`)
  }
  if (extra.count > 0) {
    lines.push(`extra: ${extra.count} row(s) in the projection that no event explains, e.g.`)
    for (const row of extra.examples) lines.push(`  ${describeRow(row)}`)
  }
  if (changed.count > 0) {
    lines.push(`changed: ${changed.count} row(s) whose values differ from the log, e.g.`)
    for (const { expected, actual } of changed.examples) {
      lines.push(`  log:        ${describeRow(expected)}`, `  projection: ${describeRow(actual)}`)
    }
  }
  return `${lines.join('\n')}\n`
}

function describeRow(row: PlantRow): string {
  return `owner=${JSON.stringify(row.owner)} id=${row.id} name=${JSON.stringify(row.name)} tag=${JSON.stringify(row.tag)} position=${row.position}`
}
