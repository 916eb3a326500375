-- The service holds every key from now on (docs/keys.md): it wraps and unwraps owners' keys, seals
-- and opens events and computes stream ids itself, so no key-encryption key and no owner's key ever
-- reaches the database. The functions that took one go, and pgcrypto with them.
DROP FUNCTION IF EXISTS plant_store_wrap(bytea);
--> statement-breakpoint
DROP FUNCTION IF EXISTS plant_store_unwrap(bytea);
--> statement-breakpoint
DROP FUNCTION IF EXISTS plant_store_kek(bytea);
--> statement-breakpoint
DROP FUNCTION IF EXISTS plant_store_open(jsonb, bytea);
--> statement-breakpoint
DROP FUNCTION IF EXISTS plant_store_unseal(text, bytea);
--> statement-breakpoint
DROP FUNCTION IF EXISTS plant_store_seal(text, bytea);
--> statement-breakpoint
DROP FUNCTION IF EXISTS plant_store_stream_id(text, bytea);
--> statement-breakpoint
DROP EXTENSION IF EXISTS pgcrypto;
--> statement-breakpoint
-- A wrapped key is in today's form (64 bytes: the KEK's id, an IV, the key under AES-256-GCM, its
-- tag) or the earlier one (52 bytes, AES-256-CBC), which `keys rotate` re-wraps. The check stays
-- NOT VALID where the wrapping of an old store's raw keys has not run yet (keys/wrap-stored-keys.ts).
ALTER TABLE "owner_keys" DROP CONSTRAINT "owner_keys_wrapped";
--> statement-breakpoint
ALTER TABLE "owner_keys" ADD CONSTRAINT "owner_keys_wrapped" CHECK (length(key) in (52, 64)) NOT VALID;
