import { afterAll, beforeAll, describe, expect, test } from 'bun:test'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import postgres from 'postgres'
import { postPlant } from '../support/plant-client.ts'
import { runCli } from '../support/server-process.ts'
import { type Service, startService } from '../support/service.ts'

// What an erasure leaves in PostgreSQL's own files, read as the machine's root reads them: the
// docs say which step removes what, and the command's closing lines say so too.
const OWNER = 'erased-on-disk-7f3a'
const NAME = 'Rosmarinus on disk 9c1e'
const TABLES = ['plants', 'owner_keys', 'owner_generations']

describe('an erased owner in the files of the tables', () => {
  let server: Service
  let sql: postgres.Sql
  beforeAll(async () => {
    server = await startService({ label: 'bytes_on_disk' })
    sql = postgres(server.env.DATABASE_URL ?? '', { max: 1, onnotice: () => {} })
    const token = await server.tokenFor(OWNER)
    for (let id = 1; id <= 3; id++) {
      expect((await postPlant(server.url, token, { id, name: `${NAME} ${id}`, tag: NAME })).status).toBe(200)
    }
  })
  afterAll(async () => {
    await sql.end()
    await server.stop()
  })

  // The files of each table and each of its indexes, as PostgreSQL names them.
  const files = async () => {
    const [{ dataDirectory } = { dataDirectory: '' }] = await sql<{ dataDirectory: string }[]>`
      select current_setting('data_directory') as "dataDirectory"`
    const relations = await sql<{ path: string }[]>`
      select pg_relation_filepath(c.oid) as path from pg_class as c
      where c.oid in (select t.oid from pg_class as t where t.relname = any(${TABLES}))
         or c.oid in (select i.indexrelid from pg_index as i join pg_class as t on t.oid = i.indrelid
                      where t.relname = any(${TABLES}))`
    return relations.map(({ path }) => join(dataDirectory, path))
  }
  const holding = async (needle: string) => {
    const found: string[] = []
    for (const file of await files()) {
      const bytes = await readFile(file).catch(() => Buffer.alloc(0))
      if (bytes.includes(Buffer.from(needle))) found.push(file)
    }
    return found
  }

  test('given an erasure and a plain VACUUM, the bytes stay in the files; VACUUM FULL removes them, as the docs and the command say', async () => {
    // given
    await sql`checkpoint`
    expect(await holding(OWNER)).not.toEqual([])
    // when
    const erased = await runCli(['owners', 'erase', OWNER], server.env)
    await sql.unsafe(`vacuum ${TABLES.join(', ')}`)
    await sql`checkpoint`
    // then: the command answered, and said what remains where
    expect(erased.exitCode).toBe(0)
    expect(erased.stdout).toBe('3\n')
    expect(erased.stderr).toContain(`VACUUM FULL ${TABLES.join(', ')}`)
    expect(erased.stderr).toContain('docs/erasure.md')
    // and a plain VACUUM frees the space but leaves the bytes where they were
    expect(await holding(OWNER)).not.toEqual([])
    // when: the step the docs name
    await sql.unsafe(`vacuum full ${TABLES.join(', ')}`)
    await sql`checkpoint`
    // then
    expect(await holding(OWNER)).toEqual([])
    expect(await holding(NAME)).toEqual([])
  })
})
