-- The standbys streaming from this server, as `pg_stat_replication` lists them. A role without
-- pg_read_all_stats (or superuser) sees each one's name but NULL for the rest.
SELECT application_name, host(client_addr) AS client_addr, state, sync_state
FROM pg_stat_replication
ORDER BY application_name, pid
