// libpq's `target_session_attrs`, as postgres.js should read it.
//
// libpq's `read-write` refuses a server in hot standby as well as one whose
// `default_transaction_read_only` is on. postgres.js 3.4.9 (node_modules/postgres/src/connection.js, `tryNext`) checks
// only `default_transaction_read_only`, which a PostgreSQL 14+ standby reports as `off`: with the
// URL pg_auto_failover hands out (`…?target_session_attrs=read-write`) it would connect to a standby
// and every write would fail. Its `primary` checks `in_hot_standby` (or `pg_is_in_recovery()` on
// older servers), which is what a writer needs, so `read-write` is handed to it as `primary`: a
// public option, no patch of the library to keep in step with its releases. The one case left
// apart is a primary with `default_transaction_read_only = on`, which libpq would skip: the service
// connects to it and its writes fail as unavailable (503), which is also what libpq gives when no
// other host qualifies. `any`, libpq's default, postgres.js does not accept: it is dropped.
// test/failover/target-session-attrs.e2e.test.ts fails once postgres.js's `read-write` skips a
// standby by itself, and then this mapping can go.
const TO_POSTGRES_JS: Record<string, string | undefined> = {
  any: undefined,
  'read-write': 'primary',
  primary: 'primary',
  'read-only': 'read-only',
  standby: 'standby',
  'prefer-standby': 'prefer-standby',
}

export const TARGET_SESSION_ATTRS = Object.keys(TO_POSTGRES_JS)

// The URL with its `target_session_attrs` (or `fallback`, libpq's PGTARGETSESSIONATTRS, when the
// URL has none) in postgres.js's terms. Works on the multi-host form, which `URL` cannot parse.
// Undefined when the value is not one libpq knows.
export function withTargetSessionAttrs(url: string, fallback?: string): string | undefined {
  const queryStart = url.indexOf('?')
  const base = queryStart === -1 ? url : url.slice(0, queryStart)
  const params = new URLSearchParams(queryStart === -1 ? '' : url.slice(queryStart + 1))
  const given = params.get('target_session_attrs') ?? fallback
  if (given === undefined || given === '') return url
  if (!Object.hasOwn(TO_POSTGRES_JS, given)) return undefined
  const mapped = TO_POSTGRES_JS[given]
  // Set even when it came from the fallback: postgres.js would otherwise read the raw value itself.
  if (mapped === undefined) params.delete('target_session_attrs')
  else params.set('target_session_attrs', mapped)
  const query = params.toString()
  return query === '' ? base : `${base}?${query}`
}
