-- How many milliseconds attempt ?1's request may still be answered: until its provider's hard
-- deadline has passed since it was sent, by the database's clock; 0 once it has. No row when
-- the attempt or its provider is gone.
SELECT CASE WHEN left_ms <= 0 THEN 0 ELSE CAST(left_ms AS INTEGER) + 1 END
FROM (SELECT json_extract(p.config, '$.hard_timeout_ms')
             - (julianday('now') - julianday(coalesce(a.sent_at, a.created_at))) * 86400000.0
             AS left_ms
      FROM attempts a JOIN providers p ON p.name = a.provider
      WHERE a.id = ?1)
