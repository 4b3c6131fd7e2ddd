-- Removes a contract.
DELETE FROM contracts WHERE name = $1
