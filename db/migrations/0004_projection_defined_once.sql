-- What the log means, defined once and applied by the database: the plant each stored event
-- describes, whatever shape of PlantCreated it was stored in. The live projection, a rebuild and a
-- verification project through it (src/plants/projection.ts); a stream read for a command and the
-- feed read event data through plant_store_current_data below. PlantCreated v0 named the id
-- `plantId` (a JSON number, whose text PostgreSQL keeps exactly) and the name `title`, and could
-- leave `tag` out. Any other type or version stops the statement (plant_store_refuse_event, 0003)
-- rather than being skipped. A plain SQL function, so the planner inlines it: a rebuild pays
-- nothing for the call.
CREATE FUNCTION plant_store_plant(event_type text, schema_version int, data jsonb, event_position bigint)
RETURNS TABLE (id bigint, name text, tag text) LANGUAGE sql STABLE AS $$
  SELECT (CASE schema_version WHEN 1 THEN data->>'id' WHEN 0 THEN data->>'plantId' END)::bigint,
         CASE schema_version WHEN 1 THEN data->>'name' WHEN 0 THEN data->>'title' END,
         data->>'tag'
  WHERE CASE WHEN event_type = 'PlantCreated' AND schema_version IN (0, 1) THEN true
             ELSE plant_store_refuse_event(event_type, schema_version, event_position) END
$$;
--> statement-breakpoint
-- An event's data in the shape the code writes today (PlantCreated v1: the id as decimal text, so
-- no JSON reader rounds it), derived from plant_store_plant.
CREATE FUNCTION plant_store_current_data(event_type text, schema_version int, data jsonb, event_position bigint)
RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT jsonb_build_object('id', plant.id::text, 'name', plant.name, 'tag', plant.tag)
  FROM plant_store_plant(event_type, schema_version, data, event_position) AS plant
$$;
