CREATE TABLE "erased_owners" (
	"pseudonym" text PRIMARY KEY NOT NULL,
	"erased_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "owner_keys" (
	"pseudonym" text PRIMARY KEY NOT NULL,
	"owner" text NOT NULL,
	"key" "bytea" NOT NULL,
	"erasing" boolean DEFAULT false NOT NULL
);
--> statement-breakpoint
CREATE TABLE "store_facts" (
	"name" text PRIMARY KEY NOT NULL,
	"value" text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX "owner_keys_owner" ON "owner_keys" USING btree ("owner") WHERE not erasing;--> statement-breakpoint
-- Crypto-shredding (CONTRACT §12, src/store/erasable.ts). pgcrypto is a trusted extension: CREATE
-- on the database is enough, and PGlite loads it when opened with it (database/database.ts).
CREATE EXTENSION IF NOT EXISTS pgcrypto;
--> statement-breakpoint
-- Text sealed under an owner's key: AES-256-CBC with a random IV in front, as base64 (one line).
-- PL/pgSQL, not SQL: a SQL function that cannot be inlined (this one names its IV twice) is parsed
-- and planned again at every execution of the statement calling it, which cost a create ~0.4 ms;
-- PL/pgSQL keeps its plan for the session.
CREATE FUNCTION plant_store_seal(plain text, key bytea) RETURNS text LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  iv bytea := gen_random_bytes(16);
BEGIN
  RETURN translate(encode(iv || encrypt_iv(convert_to(plain, 'UTF8'), key, iv, 'aes-cbc/pad:pkcs'), 'base64'), E'\n', '');
END
$$;
--> statement-breakpoint
CREATE FUNCTION plant_store_unseal(sealed text, key bytea) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT convert_from(decrypt_iv(substr(decode(sealed, 'base64'), 17), key, substr(decode(sealed, 'base64'), 1, 16), 'aes-cbc/pad:pkcs'), 'UTF8')
$$;
--> statement-breakpoint
-- A sealed event's data as it was written; null without the key.
CREATE FUNCTION plant_store_open(data jsonb, key bytea) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
  SELECT plant_store_unseal(data->>'sealed', key)::jsonb
$$;
--> statement-breakpoint
-- A plant's stream: an HMAC of its id under its owner's key, so that neither the owner nor the id
-- can be read from it, or computed again once the key is gone.
CREATE FUNCTION plant_store_stream_id(plant_id text, key bytea) RETURNS text LANGUAGE sql IMMUTABLE STRICT AS $$
  SELECT 'plant:' || encode(hmac(convert_to(plant_id, 'UTF8'), key, 'sha256'), 'hex')
$$;
--> statement-breakpoint
-- As in 0004, and OwnerErased v1 (an erasure's notice, data {}), which describes no plant.
CREATE OR REPLACE FUNCTION plant_store_event(event_type text, schema_version int, data jsonb, event_position bigint)
RETURNS TABLE (id bigint, name text, tag text, current_data jsonb) LANGUAGE sql STABLE AS $$
  SELECT plant.id, plant.name, plant.tag,
         CASE schema_version WHEN 1 THEN data
              ELSE jsonb_build_object('id', plant.id::text, 'name', plant.name, 'tag', plant.tag) END
  FROM (SELECT (CASE schema_version WHEN 1 THEN data->>'id' WHEN 0 THEN data->>'plantId' END)::bigint AS id,
               CASE schema_version WHEN 1 THEN data->>'name' WHEN 0 THEN data->>'title' END AS name,
               data->>'tag' AS tag
        WHERE CASE WHEN event_type = 'PlantCreated' AND schema_version IN (0, 1) THEN true
                   WHEN event_type = 'OwnerErased' AND schema_version = 1 THEN false
                   ELSE plant_store_refuse_event(event_type, schema_version, event_position) END) AS plant
$$;
--> statement-breakpoint
-- The fence: an event without a pseudonym (the plaintext an instance of an earlier version
-- writes) is refused from now on. NOT VALID: the events written before are sealed by the upgrade
-- step (src/store/upgrade-log.ts), which then validates it.
ALTER TABLE "events" ADD CONSTRAINT "events_erasable" CHECK (metadata ? 'pseudonym') NOT VALID;
