-- Owners' keys wrapped under a key-encryption key (KEK) that the database never stores
-- (docs/keys.md). Each session is handed the KEKs as the startup parameter plant_store.keks,
-- `<id>:<base64>` entries, comma-separated, the first the one that wraps (database/database.ts): never
-- in a statement's text, so pg_stat_activity and the statement log do not show them. A wrapped
-- key is 52 bytes: the KEK's 4-byte id, a random IV, the 32-byte key under AES-256-CBC.
-- The KEK of `kek_id`; an error naming only the id when this session was not given it.
CREATE FUNCTION plant_store_kek(kek_id bytea) RETURNS bytea LANGUAGE plpgsql STABLE STRICT AS $$
DECLARE
  keks text := ',' || coalesce(current_setting('plant_store.keks', true), '');
  at int := position(',' || encode(kek_id, 'hex') || ':' in keks);
BEGIN
  IF at = 0 THEN
    RAISE EXCEPTION 'no key-encryption key with id % is configured (KEY_ENCRYPTION_KEYS)', encode(kek_id, 'hex')
      USING ERRCODE = 'PSKEK';
  END IF;
  RETURN decode(split_part(substr(keks, at + 10), ',', 1), 'base64');
END
$$;
--> statement-breakpoint
-- A raw key wrapped under the first KEK.
CREATE FUNCTION plant_store_wrap(raw bytea) RETURNS bytea LANGUAGE plpgsql VOLATILE STRICT AS $$
DECLARE
  first text := split_part(coalesce(current_setting('plant_store.keks', true), ''), ',', 1);
  iv bytea := gen_random_bytes(16);
BEGIN
  IF first = '' THEN
    RAISE EXCEPTION 'no key-encryption key is configured (KEY_ENCRYPTION_KEYS)' USING ERRCODE = 'PSKEK';
  END IF;
  RETURN decode(split_part(first, ':', 1), 'hex') || iv
    || encrypt_iv(raw, decode(split_part(first, ':', 2), 'base64'), iv, 'aes-cbc/pad:none');
END
$$;
--> statement-breakpoint
CREATE FUNCTION plant_store_unwrap(wrapped bytea) RETURNS bytea LANGUAGE sql STABLE STRICT AS $$
  SELECT decrypt_iv(substr(wrapped, 21), plant_store_kek(substr(wrapped, 1, 4)), substr(wrapped, 5, 16), 'aes-cbc/pad:none')
$$;
--> statement-breakpoint
-- The fence: a raw key (32 bytes, what an instance of an earlier version makes) is refused from
-- now on. NOT VALID: the keys stored before are wrapped by the first start that has a KEK
-- (keys/wrap-stored-keys.ts), which then validates it.
ALTER TABLE "owner_keys" ADD CONSTRAINT "owner_keys_wrapped" CHECK (length(key) = 52) NOT VALID;
