-- The event feed of the HTTP API (SPEC §15, `GET /v1/events`): an event's place in the feed is
-- its transaction's id, then its own id. An id sequence is not commit order on PostgreSQL (a
-- transaction may take a lower id and commit after a higher one was already read); the feed
-- returns an event only once its transaction, and every one that began writing before it, has
-- ended (below the xmin of the reading statement's snapshot), so an event that becomes visible
-- later always sorts after everything already returned.
--
-- Events written before this migration get transaction 0, before every other, so positions
-- among them keep their id order. A constant default is a change to the catalogue only: the
-- table is not rewritten, and its append-only trigger forbids updating its rows anyway.
ALTER TABLE job_events ADD COLUMN tx xid8 NOT NULL DEFAULT '0';
ALTER TABLE job_events ALTER COLUMN tx SET DEFAULT pg_current_xact_id();

-- The feed reads in (tx, id) order from a position, a range of this index.
CREATE INDEX job_events_in_feed ON job_events (tx, id);

-- Every event announces itself, as every change of the other tables does (0002).
CREATE TRIGGER job_events_notify AFTER INSERT ON job_events
    FOR EACH STATEMENT EXECUTE FUNCTION onejob_notify();
