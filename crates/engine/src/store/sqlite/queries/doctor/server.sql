-- What `doctor` tells of an embedded ledger: SQLite's version, and how this connection writes
-- the file (its journal mode, `wal` when the engine opened it, and `synchronous` as a number:
-- 0 off, 1 normal, 2 full, 3 extra).
SELECT sqlite_version() AS version,
       (SELECT journal_mode FROM pragma_journal_mode) AS journal_mode,
       (SELECT synchronous FROM pragma_synchronous) AS synchronous
