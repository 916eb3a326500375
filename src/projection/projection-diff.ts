import type { plants } from '../event-log/schema.ts'

export type ProjectionRow = typeof plants.$inferSelect

export type Drift<Example> = { count: number; examples: Example[] }

// How `actual` differs from `expected`, keyed by (owner, id): rows it lacks, rows it should not
// have, and rows whose values differ, each kind counted in full with the first few by position.
export type ProjectionDiff = {
  missing: Drift<ProjectionRow>
  extra: Drift<ProjectionRow>
  changed: Drift<{ expected: ProjectionRow; actual: ProjectionRow }>
}
