//! `onejob doctor` on the ledger of the test pass (SPEC §14): a SQLite file, or a database on the
//! pass's PostgreSQL server, which has no standby. The replication's risks, on a primary with a
//! standby, are in `standby`.

use crate::common;

use common::{parse, Ledger};
use onejob_testkit::Backend;
use serde_json::{json, Value};

/// The codes of a document's risks, in order.
pub fn risk_codes(doc: &Value) -> Vec<String> {
    doc["risks"]
        .as_array()
        .unwrap_or_else(|| panic!("no risks list: {doc}"))
        .iter()
        .map(|risk| {
            for field in ["what", "why", "what_to_do"] {
                let text = risk[field].as_str().unwrap_or_default();
                assert!(!text.is_empty(), "a risk without {field}: {risk}");
            }
            risk["code"].as_str().expect("a code").to_owned()
        })
        .collect()
}

/// `onejob doctor` on the ledger: its exit code and its document, checked to be one JSON line
/// with nothing on stderr, exit 0 when it names no risk and 14 when it names any.
pub fn doctor(ledger: &Ledger, wrapper: &[&str]) -> Value {
    let run = common::finish(
        ledger
            .command_under(wrapper, &["doctor"])
            .output()
            .expect("run onejob doctor"),
    );
    assert!(run.stderr.is_empty(), "{run:?}");
    let doc = parse(&run.stdout);
    let expected = if risk_codes(&doc).is_empty() { 0 } else { 14 };
    assert_eq!(run.code, expected, "{run:?}");
    doc
}

#[test]
fn onejob_doctor_describes_the_ledger_of_the_pass() {
    let ledger = Ledger::new();
    let doc = doctor(&ledger, &[]);
    let described = &doc["ledger"];
    assert_eq!(described["location"], ledger.db.as_str(), "{doc}");
    let version = described["server_version"].as_str().unwrap_or_default();
    assert!(version.starts_with(|c: char| c.is_ascii_digit()), "{doc}");
    match onejob_testkit::backend() {
        Backend::Sqlite => {
            assert_eq!(described["backend"], "sqlite", "{doc}");
            assert_eq!(
                described["sqlite"],
                json!({ "journal_mode": "wal", "synchronous": "full" })
            );
            assert!(described.get("postgres").is_none(), "{doc}");
            assert_eq!(risk_codes(&doc), Vec::<String>::new());
        }
        Backend::Postgres => {
            assert_eq!(described["backend"], "postgres", "{doc}");
            assert!(described.get("sqlite").is_none(), "{doc}");
            let server = &described["postgres"];
            assert_eq!(server["primary"], true, "{doc}");
            assert_eq!(server["standbys"], json!([]), "{doc}");
            assert_eq!(server["synchronous_standby_names"], "", "{doc}");
            let skew = server["clock_skew_ms"].as_i64().expect("a skew");
            assert!(skew.abs() < 1000, "{doc}");
            // No standby, so no replication risk; the pass's server trades durability for speed
            // (synchronous_commit off), which is named.
            let expected: Vec<String> = match server["synchronous_commit"].as_str() {
                Some("off") => vec!["synchronous_commit_below_on".to_owned()],
                _ => Vec::new(),
            };
            assert_eq!(risk_codes(&doc), expected, "{doc}");
        }
    }
}
