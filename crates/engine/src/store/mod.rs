//! Every SQL statement of the engine, one file per table; nothing outside `store` writes SQL.

pub mod attempts;
pub mod checks;
pub mod contracts;
pub mod events;
pub mod jobs;
pub mod providers;

use std::time::Duration;

use chrono::{SecondsFormat, Utc};

/// The current time in the ledger's fixed-width UTC text form.
pub fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `now() + d` in the same form; used for lease expiry.
pub fn now_plus(d: Duration) -> String {
    let d = chrono::Duration::from_std(d).unwrap_or(chrono::Duration::MAX);
    let t = Utc::now()
        .checked_add_signed(d)
        .unwrap_or(chrono::DateTime::<Utc>::MAX_UTC);
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A JSON column's text parsed back; the schema's `json_valid` checks make failure a bug.
pub(crate) fn json_column(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap_or(serde_json::Value::String(text.to_owned()))
}
