-- What the log means, defined once and applied by the database: each stored event as the code
-- reads it today, whatever shape of PlantCreated it was stored in: the plant it describes, and
-- its data in today's shape (PlantCreated v1: the id as decimal text, so no JSON reader rounds
-- it). The live projection, a rebuild and a verification take the plant (src/plants/projection.ts);
-- a stream read for a command and the feed take the data (src/store/event-store.ts). PlantCreated
-- v0 named the id `plantId` (a JSON number, whose text PostgreSQL keeps exactly) and the name
-- `title`, and could leave `tag` out. Any other type or version stops the statement
-- (plant_store_refuse_event, 0003) rather than being skipped. A plain SQL function, so the planner
-- inlines it: a read computes only the columns it takes, and a rebuild pays nothing for the call.
CREATE FUNCTION plant_store_event(event_type text, schema_version int, data jsonb, event_position bigint)
RETURNS TABLE (id bigint, name text, tag text, current_data jsonb) LANGUAGE sql STABLE AS $$
  SELECT plant.id, plant.name, plant.tag,
         CASE schema_version WHEN 1 THEN data
              ELSE jsonb_build_object('id', plant.id::text, 'name', plant.name, 'tag', plant.tag) END
  FROM (SELECT (CASE schema_version WHEN 1 THEN data->>'id' WHEN 0 THEN data->>'plantId' END)::bigint AS id,
               CASE schema_version WHEN 1 THEN data->>'name' WHEN 0 THEN data->>'title' END AS name,
               data->>'tag' AS tag
        WHERE CASE WHEN event_type = 'PlantCreated' AND schema_version IN (0, 1) THEN true
                   ELSE plant_store_refuse_event(event_type, schema_version, event_position) END) AS plant
$$;
