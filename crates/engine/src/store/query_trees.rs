//! The two backends' query trees: the same files but a named few, and no query twice.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Queries one backend has and the other does not, each for a reason of its backend.
const SQLITE_ONLY: [&str; 4] = [
    // One savepoint and the statements in one call; PostgreSQL runs the lone submit's.
    "jobs/submit_step.sql",
    // One answer's compare-and-swap in three statements; PostgreSQL takes a group's
    // answers in one (`jobs/claim_answers.sql`).
    "jobs/claim_answer.sql",
    // One job's first attempt; PostgreSQL inserts a pass's in one statement
    // (`attempts/insert_first_many.sql`).
    "attempts/insert_first.sql",
    // A job and its attempts in one call; PostgreSQL reads them in two.
    "jobs/with_attempts.sql",
];
const POSTGRES_ONLY: [&str; 11] = [
    // The standbys streaming from the server: an embedded file has none.
    "doctor/standbys.sql",
    // A group's writes, several jobs in one statement each.
    "attempts/insert_first_many.sql",
    "attempts/send_many.sql",
    "jobs/claim_answers.sql",
    // The budgets a run of sends is reserved against, taken before the run's statement.
    "budgets/lock_covering_many.sql",
    // Row locks and hosts that share the ledger: SQLite's one writer needs neither.
    "attempts/lock_expired.sql",
    "attempts/pending_left.sql",
    "jobs/lock.sql",
    "jobs/lock_free.sql",
    "jobs/lock_skipping.sql",
    "jobs/sendable_locking.sql",
];

fn files(backend: &str) -> BTreeSet<String> {
    let root: PathBuf = [env!("CARGO_MANIFEST_DIR"), "src/store", backend, "queries"]
        .iter()
        .collect();
    let mut found = BTreeSet::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("a query folder") {
            let path = entry.expect("an entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "sql") {
                let relative = path.strip_prefix(&root).expect("under the root");
                found.insert(relative_name(relative));
            }
        }
    }
    found
}

fn relative_name(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// The column lists under `columns/` count too: both backends have the same rows.
#[test]
fn both_backends_hold_the_same_queries_but_the_named_backend_only_ones() {
    let (sqlite, postgres) = (files("sqlite"), files("postgres"));
    let only = |a: &BTreeSet<String>, b: &BTreeSet<String>| -> BTreeSet<String> {
        a.difference(b).cloned().collect()
    };
    let named = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect();
    assert_eq!(only(&sqlite, &postgres), named(&SQLITE_ONLY), "SQLite only");
    assert_eq!(
        only(&postgres, &sqlite),
        named(&POSTGRES_ONLY),
        "PostgreSQL only"
    );
}

/// Each query as the build wrote it out, its column lists filled in, compared without its
/// comments and with its words one space apart: two of one backend that say the same are
/// one operation under two names.
#[test]
fn no_two_queries_of_one_backend_are_the_same_statement() {
    for backend in ["sqlite", "postgres"] {
        let mut seen = std::collections::BTreeMap::new();
        for name in files(backend) {
            if name.starts_with("columns/") {
                continue;
            }
            let path: PathBuf = [env!("OUT_DIR"), backend, "queries", &name]
                .iter()
                .collect();
            let text = std::fs::read_to_string(&path).expect("the build wrote every query");
            let statement = statement(&text);
            assert!(
                !statement.contains("_columns}"),
                "{backend}: {name} was not filled in"
            );
            if let Some(other) = seen.insert(statement, name.clone()) {
                panic!("{backend}: {other} and {name} are the same statement");
            }
        }
    }
}

/// A query's statement without its comments, its words one space apart.
fn statement(text: &str) -> String {
    text.lines()
        .filter(|l| !l.trim_start().starts_with("--"))
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}
