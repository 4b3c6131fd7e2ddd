-- What `doctor` tells of a PostgreSQL ledger's server, as this connection sees it: its version,
-- the address and port the connection reached (NULL over a socket), whether it takes writes (a primary, not a standby in recovery), the settings that decide when
-- a commit is acknowledged, and the server's clock now (not the transaction's start), in
-- milliseconds since the epoch, for the skew to the host's.
SELECT current_setting('server_version') AS version,
       host(inet_server_addr()) || ':' || inet_server_port() AS connected_to,
       NOT pg_is_in_recovery() AS is_primary,
       current_setting('synchronous_commit') AS synchronous_commit,
       current_setting('synchronous_standby_names') AS synchronous_standby_names,
       (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS clock_ms
