import { afterAll, expect, test } from 'bun:test'
import postgres from 'postgres'
import { listEveryPlant, postPlant } from '../support/plant-client.ts'
import { startService } from '../support/service.ts'

// A database writer copies one owner's sealed event into a new event under another stream: the
// copy must not open as that owner's, and every tool of the log names it by its position, in one
// line, and goes on.
const cleanups: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup()
})

test("given an owner's ciphertext copied by SQL into a new event under another stream id, when the tools read the log, then each names it by its position in one line and goes on", async () => {
  // given: two owners' plants through the real server, and a copy of ada's event under a made-up stream
  const service = await startService({ label: 'copied_ciphertext' })
  cleanups.push(service.stop)
  const ada = await service.tokenFor('ada')
  const bob = await service.tokenFor('bob')
  expect((await postPlant(service.url, ada, { id: 1, name: 'Fern' })).status).toBe(200)
  expect((await postPlant(service.url, bob, { id: 2, name: 'Moss' })).status).toBe(200)
  const sql = postgres(String(service.databaseUrl), { max: 1, onnotice: () => {} })
  cleanups.push(async () => void (await sql.end()))
  const [copy] = await sql<{ position: string }[]>`
    insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
    select ${`plant:${'c'.repeat(64)}`}, 1, type, schema_version, data, metadata, recorded_at
    from events where position = (select min(position) from events)
    returning position::text as position`
  const named = `the event at position ${copy?.position} does not open with its owner's key (its data)`

  // when: the projection is verified
  const verified = await service.cli(['projection', 'verify'])
  // then: it exits 1, naming the copy in one line, without a stack or the SQL's parameters
  expect(verified.exitCode).toBe(1)
  expect(verified.stderr.split('\n').filter((line) => line.includes(named))).toHaveLength(1)
  expect(verified.stderr).not.toContain('    at ')
  expect(verified.stderr).not.toContain('insert into')
  expect(verified.stdout).toContain('the projection matches the fold of the log (3 events)')

  // when: the projection is rebuilt
  const rebuilt = await service.cli(['projection', 'rebuild'])
  // then: it goes on to the end and swaps, naming the copy once; every owner lists what they created
  expect(rebuilt.exitCode).toBe(0)
  expect(rebuilt.stderr).toContain(`${named}: passed by, it makes no row\n`)
  expect(rebuilt.stdout).toContain('rebuilt plants: 3 events, 2 plants')
  expect(rebuilt.stdout).toContain('1 event(s) passed by')
  expect((await listEveryPlant(service.url, ada)).map((plant) => plant.name)).toEqual(['Fern'])
  expect((await listEveryPlant(service.url, bob)).map((plant) => plant.name)).toEqual(['Moss'])

  // when: the store is exported and the export imported into an empty store
  const exported = await service.cli(['events', 'export'])
  expect(exported.exitCode).toBe(0)
  const target = await startService({ label: 'copied_ciphertext_target', instances: 0 })
  cleanups.push(target.stop)
  const imported = await target.cli(['events', 'import'], exported.stdout)
  // then: the import is refused in one line that names the copy's position
  expect(imported.exitCode).toBe(1)
  expect(imported.stderr.trim().split('\n')).toHaveLength(1)
  expect(imported.stderr).toContain(`(the event at position ${copy?.position})`)
}, 240_000)
