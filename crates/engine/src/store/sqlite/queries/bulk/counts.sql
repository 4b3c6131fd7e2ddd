-- Operation ?1's jobs: how many, how many changed, how many skipped, how many undecided.
SELECT count(*) AS matched,
       count(*) FILTER (WHERE outcome = 'changed') AS changed,
       count(*) FILTER (WHERE outcome IS NOT NULL AND outcome <> 'changed') AS skipped,
       count(*) FILTER (WHERE outcome IS NULL) AS undecided
FROM bulk_items WHERE operation_id = ?1
