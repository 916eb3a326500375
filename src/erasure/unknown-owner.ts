import { sql } from 'drizzle-orm'
import { type Executor, rowsOf } from '../database/database.ts'
import { ownerKeys } from '../event-log/schema.ts'

const FORMS = ['NFC', 'NFD', 'NFKC', 'NFKD'] as const

// What an erasure that found nobody to erase says beside its 0. The store cannot tell an owner it
// never had from one erased already (it keeps nothing derived from a subject alone), but it can
// tell that the same text in another Unicode form names an owner: a subject is compared as the
// token carries it, code point by code point, and an operator's terminal may have changed its form.
export async function noSuchOwner(db: Executor, owner: string): Promise<string> {
  const said = `no such owner ${JSON.stringify(owner)} (never seen here, or erased already): nothing was erased`
  const forms = FORMS.map((form) => [form, owner.normalize(form)] as const).filter(
    ([, text]) => text !== owner,
  )
  if (forms.length === 0) return said
  const found = rowsOf<{ owner: string }>(
    await db.execute(sql`select ${ownerKeys.owner} as owner from ${ownerKeys}
      where not ${ownerKeys.erasing} and ${ownerKeys.owner} in (${sql.join(
        forms.map(([, text]) => sql`${text}`),
        sql`, `,
      )})`),
  ).map((row) => row.owner)
  const named = forms.filter(([, text]) => found.includes(text)).map(([form]) => form)
  if (named.length === 0) return said
  return `${said}; its ${named.join('/')} form names an owner: subjects are compared code point by code point, so that is another subject (erase it by the form its tokens carry)`
}
