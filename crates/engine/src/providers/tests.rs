//! The provider fields against the migrations that keep them, and the rules a configuration keeps.

use super::{ProviderConfig, PROVIDER_FIELDS};

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

/// A price per output token needs the context window that bounds an answer's length: without
/// it an attempt's worst case could not be counted.
#[test]
fn a_price_per_output_token_needs_a_context_window() {
    let config = |window: &str| {
        format!(
            r#"{{"name": "llm", "kind": "http", "base_url": "http://127.0.0.1:9/x",
                "soft_timeout_ms": 1000, "hard_timeout_ms": 2000,
                "honours_idempotency_key": false{window},
                "price": {{"currency": "USD", "per_1k_output_tokens": "0.60"}}}}"#
        )
    };
    let refused = ProviderConfig::parse(&config("")).expect_err("refused without a window");
    assert!(
        refused
            .to_string()
            .contains("provider.price.per_1k_output_tokens"),
        "{refused}"
    );
    ProviderConfig::parse(&config(r#", "context_window": 8000"#)).expect("kept with a window");
}
