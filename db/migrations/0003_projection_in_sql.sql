-- The projection is applied by the database (src/plants/projection.ts). An event it cannot read
-- stops the statement, as the application's decoder refuses it, rather than being skipped.
CREATE FUNCTION plant_store_refuse_event(event_type text, schema_version int, event_position bigint)
RETURNS boolean LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'unknown event % v% at position %', event_type, schema_version, event_position
    USING ERRCODE = 'data_exception';
END;
$$;
