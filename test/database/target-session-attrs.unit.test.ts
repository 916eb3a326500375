import { expect, test } from 'bun:test'
import { withTargetSessionAttrs } from '../../src/database/target-session-attrs.ts'

const hosts = 'postgres://app@10.0.0.1:5432,10.0.0.2:5432/plants'

test("libpq's read-write is handed to postgres.js as primary, the rest of the URL kept", () => {
  expect(withTargetSessionAttrs(`${hosts}?sslmode=disable&target_session_attrs=read-write`)).toBe(
    `${hosts}?sslmode=disable&target_session_attrs=primary`,
  )
  expect(withTargetSessionAttrs(`${hosts}?target_session_attrs=standby`)).toBe(
    `${hosts}?target_session_attrs=standby`,
  )
})

test('PGTARGETSESSIONATTRS applies when the URL has none; any is dropped; an unknown value is refused', () => {
  expect(withTargetSessionAttrs(hosts, 'read-write')).toBe(`${hosts}?target_session_attrs=primary`)
  expect(withTargetSessionAttrs(`${hosts}?target_session_attrs=primary`, 'standby')).toBe(
    `${hosts}?target_session_attrs=primary`,
  )
  expect(withTargetSessionAttrs(`${hosts}?target_session_attrs=any`)).toBe(hosts)
  expect(withTargetSessionAttrs(hosts)).toBe(hosts)
  expect(withTargetSessionAttrs(`${hosts}?target_session_attrs=writable`)).toBeUndefined()
})
