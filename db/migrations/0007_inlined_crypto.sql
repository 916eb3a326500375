-- The functions that open events and name their streams are declared STABLE, as the conversions
-- they call are (convert_to, convert_from): declared IMMUTABLE, PostgreSQL could not inline them,
-- and ran each as a SQL function of its own, parsed and planned again at every execution of the
-- statement calling it (~45 µs an append, more for every read that opens events). Inlined, they
-- cost what their expressions cost. Their results are the same.
CREATE OR REPLACE FUNCTION plant_store_unseal(sealed text, key bytea) RETURNS text LANGUAGE sql STABLE STRICT AS $$
  SELECT convert_from(decrypt_iv(substr(decode(sealed, 'base64'), 17), key, substr(decode(sealed, 'base64'), 1, 16), 'aes-cbc/pad:pkcs'), 'UTF8')
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION plant_store_open(data jsonb, key bytea) RETURNS jsonb LANGUAGE sql STABLE AS $$
  SELECT plant_store_unseal(data->>'sealed', key)::jsonb
$$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION plant_store_stream_id(plant_id text, key bytea) RETURNS text LANGUAGE sql STABLE STRICT AS $$
  SELECT 'plant:' || encode(hmac(convert_to(plant_id, 'UTF8'), key, 'sha256'), 'hex')
$$;
