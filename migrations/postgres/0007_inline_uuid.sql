-- onejob_uuid (0002) as before, but not STRICT: the planner inlines a SQL function into the
-- statement that calls it only when it can prove a STRICT one's body NULL for a NULL argument,
-- which it cannot for a CASE. Called in nearly every statement that looks up an id, it ran as a
-- function call each time. Its answers are the same: NULL for NULL, as for any text that is
-- not a canonical UUID.
CREATE OR REPLACE FUNCTION onejob_uuid(t text) RETURNS uuid LANGUAGE sql IMMUTABLE PARALLEL SAFE
    AS $$ SELECT CASE WHEN t ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                      THEN t::uuid END $$;
