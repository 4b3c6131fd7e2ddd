//! Fixtures more than one crate's tests use: a contract for AI answers, and another process
//! that holds a SQLite ledger's write lock.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A contract for one-sentence summaries with a word count, with two samples, as JSON.
pub const SUMMARY_CONTRACT: &str = r#"{
    "name": "summary",
    "schema": {
        "type": "object",
        "properties": {"summary": {"type": "string"}, "words": {"type": "integer"}},
        "required": ["summary", "words"]
    },
    "template": {"system": "You summarise text in one sentence.", "user": "Summarise: {{text}}"},
    "samples": [{"text": "The cat sat on the mat."}, {"text": "Rain, then sun."}]
}"#;

/// Another process that takes the SQLite file's write lock (`BEGIN IMMEDIATE`) and keeps it
/// until its stdin closes; returns once it holds the lock.
pub fn hold_sqlite_file(path: &Path) -> Child {
    let script = "import sqlite3, sys\n\
                  c = sqlite3.connect(sys.argv[1], isolation_level=None)\n\
                  c.execute('BEGIN IMMEDIATE')\n\
                  print('held', flush=True)\n\
                  sys.stdin.read()\n\
                  c.execute('ROLLBACK')\n";
    let mut child = Command::new("python3")
        .args(["-c", script])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 holds the ledger");
    let mut line = String::new();
    if let Some(out) = child.stdout.as_mut() {
        BufReader::new(out)
            .read_line(&mut line)
            .expect("the holder says it holds the file");
    }
    assert_eq!(line.trim(), "held", "the holder took the file's write lock");
    child
}
