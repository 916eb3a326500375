// Seeds a log by hand, in bulk, in the form the service writes (docs/erasure.md): each owner's key
// found or made, every event sealed under it. `source` is a query of (owner text, id bigint,
// name text, tag text) rows; with `project`, each gets its `plants` row too, as a create would.
// Returns the statement's text, for any client.
export function sealedSeed(source: string, { project }: { project: boolean }): string {
  return `
    with source as (${source}),
    keys as (
      insert into owner_keys (pseudonym, owner, key)
      select encode(gen_random_bytes(16), 'hex'), owner, plant_store_wrap(gen_random_bytes(32)) from (select distinct owner from source) as o
      on conflict (owner) where not erasing do update set owner = excluded.owner
      returning pseudonym, owner, plant_store_unwrap(key) as key),
    sealed as (
      select s.owner, s.id, s.name, s.tag, plant_store_stream_id(s.id::text, k.key) as stream_id,
             jsonb_build_object('sealed', plant_store_seal(
               jsonb_build_object('id', s.id::text, 'name', s.name, 'tag', s.tag)::text, k.key)) as data,
             jsonb_build_object('pseudonym', k.pseudonym,
               'sealed', plant_store_seal('{"requestId": "seed"}', k.key)) as metadata
      from source as s join keys as k using (owner)),
    appended as (
      insert into events (stream_id, stream_version, type, schema_version, data, metadata, recorded_at)
      select stream_id, 1, 'PlantCreated', 1, data, metadata, now() from sealed order by owner, id
      returning position, stream_id)
    ${
      project
        ? `, projected as (
      insert into plants (owner, id, name, tag, position)
      select sealed.owner, sealed.id, sealed.name, sealed.tag, appended.position
      from appended join sealed using (stream_id))`
        : ''
    }
    select count(*)::int as events from appended`
}
