import { expect, test } from 'bun:test'
import { exitCodeOf, type FailureCode } from '../../src/shared/errors.ts'
import { docSection } from '../support/readme.ts'

// docs/operating.md's table of exit codes says, for each code, what stops the server and the CLI
// with it; each failure that stops them exits with the code whose row names it.
const NAMED_IN_ITS_ROW: [FailureCode, string][] = [
  ['BAD_SETTING', 'a setting to change'],
  ['BAD_USAGE', 'a bad command, option or argument'],
  ['DATABASE_UNREACHABLE', 'a database or pooler that refused or did not answer'],
  ['DATA_DIR_IN_USE', 'a `DATA_DIR` in use'],
  ['EMBEDDED_UNAVAILABLE', 'the embedded server unable to run'],
  ['IMPORT_REFUSED', 'a refused import'],
  ['ERASURE_PENDING', 'a pending erasure'],
  ['LOG_BUSY', 'a busy log'],
]

test('given the exit codes of docs/operating.md, then each failure that stops a start or a command is named in the row of its code', async () => {
  // given
  const section = await docSection('Exit codes')
  const rows = new Map(
    [...section.matchAll(/^\| (\d) \| (.*) \|$/gm)].map(([, code, text]) => [Number(code), text ?? '']),
  )
  // then
  expect([...rows.keys()]).toEqual([0, 1, 2])
  for (const [failure, words] of NAMED_IN_ITS_ROW)
    expect({ failure, named: rows.get(exitCodeOf(failure) ?? -1)?.includes(words) }).toEqual({
      failure,
      named: true,
    })
})
