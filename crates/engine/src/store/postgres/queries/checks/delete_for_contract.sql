-- Removes every check of contract $1.
DELETE FROM contract_checks WHERE contract = $1
