//! Rebuilds the engine when a migration or a query changes, and writes out the queries with
//! their column lists filled in.
//!
//! `sqlx::migrate!` embeds the migrations at compile time. The queries are the files under
//! `src/store/<backend>/queries/`; the columns of a row that many of them return are written
//! once per backend, in `queries/columns/<row>.sql`, and a query names them by a placeholder:
//! `{job_columns}` for `columns/job.sql` as written, `{j.job_columns}` for the same with each
//! column taken from `j` (`j.owner_id`, `onejob_time(j.created_at) AS created_at`). This script
//! writes every query, its placeholders filled in, to `$OUT_DIR/<backend>/queries/`, and
//! `store::query!` includes it from there. A placeholder that names no list, a brace outside a
//! string or a comment, a list that is not one, or a list no query uses fails the build, naming
//! the file and line. docs/adr/0058 says why.

#[path = "build/columns.rs"]
mod columns;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::{env, fs};

use columns::{fill_in, ColumnList, SUFFIX};

/// The backends, each a folder under `src/store/` with its `queries/`.
const BACKENDS: [&str; 2] = ["sqlite", "postgres"];
/// The folder under `queries/` that holds the column lists; they are not queries themselves.
const COLUMNS: &str = "columns";

fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by Cargo"));
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("set by Cargo"));
    let mut errors = Vec::new();
    for backend in BACKENDS {
        let tree = format!("src/store/{backend}/queries");
        // A folder: Cargo looks at every file under it, so a query added, changed or removed
        // runs this script again.
        println!("cargo:rerun-if-changed={tree}");
        let out = out.join(backend).join("queries");
        errors.extend(write_tree(&manifest, &manifest.join(&tree), &out));
    }
    if !errors.is_empty() {
        for error in &errors {
            eprintln!("error: {error}");
        }
        eprintln!(
            "error: {} mistake(s) in the engine's queries (the placeholders are explained in \
             crates/engine/build.rs)",
            errors.len()
        );
        std::process::exit(1);
    }
}

/// Reads one backend's column lists and writes each of its queries, filled in, under `out`;
/// the mistakes found, each with its file and line.
fn write_tree(manifest: &Path, root: &Path, out: &Path) -> Vec<String> {
    let shown = |path: &Path, (line, message): (usize, String)| {
        let path = path.strip_prefix(manifest).unwrap_or(path);
        format!("{}:{line}: {message}", path.display())
    };
    let mut errors = Vec::new();
    let mut lists = BTreeMap::new();
    for path in sql_files(&root.join(COLUMNS)) {
        let row = path.file_stem().map(|s| s.to_string_lossy().into_owned());
        match ColumnList::parse(&read(&path)) {
            Ok(list) => {
                lists.insert(row.unwrap_or_default(), list);
            }
            Err(mistake) => errors.push(shown(&path, mistake)),
        }
    }
    if !errors.is_empty() {
        // Every query that names the list would fail for it too: its own mistake says why.
        return errors;
    }
    let (mut used, mut written) = (BTreeSet::new(), BTreeSet::new());
    for path in sql_files(root) {
        let relative = path.strip_prefix(root).expect("under the root");
        if relative.starts_with(COLUMNS) {
            continue;
        }
        match fill_in(&read(&path), &lists, &mut used) {
            Ok(text) => {
                write_if_changed(&out.join(relative), &text);
                written.insert(out.join(relative));
            }
            Err(mistakes) => errors.extend(mistakes.into_iter().map(|m| shown(&path, m))),
        }
    }
    if !errors.is_empty() {
        return errors;
    }
    // A query removed (or renamed) goes from here too, so that code still naming it fails to
    // compile as it did when it was included from the source tree.
    for stale in sql_files(out).into_iter().filter(|p| !written.contains(p)) {
        fs::remove_file(&stale).unwrap_or_else(|e| panic!("removing {}: {e}", stale.display()));
    }
    for row in lists.keys().filter(|row| !used.contains(*row)) {
        let path = root.join(COLUMNS).join(format!("{row}.sql"));
        let message = format!("no query uses {{{row}{SUFFIX}}}; use the list or remove it");
        errors.push(shown(&path, (1, message)));
    }
    errors
}

/// Every `.sql` file under `dir`, in a stable order; none when it does not exist.
fn sql_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "sql") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// Writes `text` to `path` unless it holds it already, so that a query left as it was does not
/// make the engine compile again.
fn write_if_changed(path: &Path, text: &str) {
    if fs::read_to_string(path).is_ok_and(|old| old == text) {
        return;
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    }
    fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}
