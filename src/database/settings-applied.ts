import { sql } from 'drizzle-orm'
import { type Executor, rowsOf } from './database.ts'

export type SettingApplied = { name: string; wanted: string; found: string }

// The settings the pool asks for at connection (database/database.ts) that the sessions do not have.
// A pooler that drops startup parameters (PgBouncer's `ignore_startup_parameters`, which it needs
// for these) leaves the database's own values instead, and nothing else would say so.
export async function settingsNotApplied(
  db: Executor,
  statementTimeoutMs: number,
): Promise<SettingApplied[]> {
  const wanted: Record<string, string> = {
    statement_timeout: String(statementTimeoutMs),
    plan_cache_mode: 'force_generic_plan',
  }
  const rows = rowsOf<{ name: string; setting: string }>(
    await db.execute(
      sql`select name, setting from pg_settings where name in ('statement_timeout', 'plan_cache_mode')`,
    ),
  )
  return rows
    .filter((row) => wanted[row.name] !== row.setting)
    .map((row) => ({ name: row.name, wanted: wanted[row.name] ?? '', found: row.setting }))
}

// Behind a pooler (`prepare=false`) the settings are not sent at all (database/postgres-client.ts):
// one line says how the statement timeout is kept instead.
export function describeClientTimeout(statementTimeoutMs: number): string {
  return `DATABASE_URL has prepare=false, as behind a pooler: statement_timeout and plan_cache_mode are not sent at connection; the service cancels a statement itself after ${statementTimeoutMs} ms (DATABASE_STATEMENT_TIMEOUT_MS), and plan_cache_mode does nothing for unnamed statements`
}

// One line for the operator: what the sessions run with, and where to set it instead.
export function describeSettingsNotApplied(settings: SettingApplied[]): string {
  const each = settings.map(
    ({ name, wanted, found }) =>
      `${name} is ${found}${name === 'statement_timeout' ? ' ms' : ''}, not ${wanted}`,
  )
  return `DATABASE_URL: the database's sessions do not have the settings the service asks for at connection (${each.join('; ')}): a pooler dropped them; set them on the database (ALTER DATABASE … SET, docs/operating.md)`
}
