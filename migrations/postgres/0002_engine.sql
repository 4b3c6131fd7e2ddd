-- What the engine's statements need beside the tables of 0001.

-- Times the engine writes are whole milliseconds, the precision of the SQLite ledger's text
-- times: a time read back as text and written again (a check's provider_updated_at) is equal
-- to the original, and both backends show times alike. The clock is the database's.
CREATE FUNCTION onejob_now() RETURNS timestamptz LANGUAGE sql STABLE
    AS $$ SELECT date_trunc('milliseconds', now()) $$;

-- A time as the engine's fixed-width UTC text, e.g. 2026-11-30T09:15:02.123Z.
CREATE FUNCTION onejob_time(t timestamptz) RETURNS text LANGUAGE sql STABLE STRICT
    AS $$ SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') $$;

-- Counters are read as 64-bit integers, as on SQLite.
ALTER TABLE jobs ALTER COLUMN version TYPE bigint;
ALTER TABLE attempts ALTER COLUMN number TYPE bigint;
ALTER TABLE attempts ALTER COLUMN job_version TYPE bigint;
ALTER TABLE attempts ALTER COLUMN http_status TYPE bigint;

-- Live updates (SPEC §14): every statement that changes the ledger notifies listeners once per
-- transaction (identical notifications of one transaction are folded into one).
CREATE FUNCTION onejob_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('onejob_changes', '');
    RETURN NULL;
END $$;

CREATE TRIGGER jobs_notify AFTER INSERT OR UPDATE OR DELETE ON jobs
    FOR EACH STATEMENT EXECUTE FUNCTION onejob_notify();
CREATE TRIGGER attempts_notify AFTER INSERT OR UPDATE OR DELETE ON attempts
    FOR EACH STATEMENT EXECUTE FUNCTION onejob_notify();
CREATE TRIGGER providers_notify AFTER INSERT OR UPDATE OR DELETE ON providers
    FOR EACH STATEMENT EXECUTE FUNCTION onejob_notify();
CREATE TRIGGER contracts_notify AFTER INSERT OR UPDATE OR DELETE ON contracts
    FOR EACH STATEMENT EXECUTE FUNCTION onejob_notify();
CREATE TRIGGER contract_checks_notify AFTER INSERT OR UPDATE OR DELETE ON contract_checks
    FOR EACH STATEMENT EXECUTE FUNCTION onejob_notify();

-- Text as a job's or an attempt's id: NULL when it is not a UUID in its canonical form, so an
-- id that is not one names nothing (as on SQLite) instead of failing the statement.
CREATE FUNCTION onejob_uuid(t text) RETURNS uuid LANGUAGE sql IMMUTABLE STRICT
    AS $$ SELECT CASE WHEN t ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
                      THEN t::uuid END $$;
