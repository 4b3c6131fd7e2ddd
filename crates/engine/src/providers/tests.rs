//! The provider fields against the migrations that keep them.

use super::PROVIDER_FIELDS;

/// Provider fields added after the migrations that drop unknown fields were shipped.
const ADDED_SINCE: [&str; 2] = ["key_retention_s", "price"];

/// Every single-quoted text of a migration, in order, its comments left out.
fn quoted(sql: &str) -> Vec<&str> {
    sql.lines()
        .map(|line| line.split("--").next().unwrap_or_default())
        .flat_map(|code| code.split('\'').skip(1).step_by(2))
        .collect()
}

#[test]
fn the_migrations_that_drop_unknown_fields_keep_exactly_the_provider_fields() {
    let migrations = [
        (
            "0006_provider_fields.sql",
            include_str!("../../../../migrations/0006_provider_fields.sql"),
        ),
        (
            "postgres/0004_provider_fields.sql",
            include_str!("../../../../migrations/postgres/0004_provider_fields.sql"),
        ),
    ];
    // Fields added since run on configurations that could not yet hold them.
    let at_the_time: Vec<&str> = PROVIDER_FIELDS
        .into_iter()
        .filter(|f| !ADDED_SINCE.contains(f))
        .collect();
    for (file, sql) in migrations {
        assert_eq!(quoted(sql), at_the_time, "{file} keeps other fields");
    }
}
