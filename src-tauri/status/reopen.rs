//! Opening again a ledger that is not open: tried again in the background while its server
//! does not answer, on "Try again", on a choice in Settings, or once an unreadable file was
//! moved aside for a new ledger.

use std::path::{Path, PathBuf};
use std::time::Duration;

use onejob_engine::error::StorageKind;
use onejob_engine::Error;
use serde::Serialize;
use tauri::{AppHandle, Manager, Runtime};

use crate::AppState;

use super::{announce, is_not_a_database, LedgerStatus, NotOpen, Problem, LONGEST_WAIT};

/// Records that the ledger could not be opened, tells the window, and keeps trying in the
/// background when its server did not answer.
pub fn not_opened<R: Runtime>(app: &AppHandle<R>, why: NotOpen) {
    let state = app.state::<AppState>();
    let retrying = why.problem == Problem::Unreachable;
    state.set_not_open(why);
    announce(app);
    if retrying
        && !state
            .retrying
            .swap(true, std::sync::atomic::Ordering::SeqCst)
    {
        let app = app.clone();
        tauri::async_runtime::spawn(async move {
            keep_trying(&app).await;
            let state = app.state::<AppState>();
            state
                .retrying
                .store(false, std::sync::atomic::Ordering::SeqCst);
        });
    }
}

/// Tries the ledger that did not answer again, a little later each time, until it opens or
/// fails for another reason.
async fn keep_trying<R: Runtime>(app: &AppHandle<R>) {
    let mut wait = Duration::from_millis(500);
    loop {
        tokio::time::sleep(wait).await;
        wait = (wait * 2).min(LONGEST_WAIT);
        let state = app.state::<AppState>();
        match state.not_open() {
            Some(why) if why.problem == Problem::Unreachable => {}
            _ => return,
        }
        try_again(app).await;
    }
}

/// Tries once more to open the ledger that is not open ("Try again", and the background
/// tries): the app continues on it when it opens. A missing file is only looked for, never
/// made. Answers the status after the try.
pub async fn try_again<R: Runtime>(app: &AppHandle<R>) -> LedgerStatus {
    let state = app.state::<AppState>();
    let _one = state.opening.lock().await;
    let Some(why) = state.not_open() else {
        return state.status();
    };
    if why.problem == Problem::Missing && !Path::new(&why.target).exists() {
        return state.status();
    }
    open_here(app, &why.target, why.since).await;
    state.status()
}

/// Opens `target` and continues the app on it, or records why it could not (keeping `since`,
/// when the ledger already was not open).
async fn open_here<R: Runtime>(
    app: &AppHandle<R>,
    target: &str,
    since: chrono::DateTime<chrono::Local>,
) {
    match crate::open_ledger(target).await {
        Ok((engine, seen)) => crate::install(app, engine, seen),
        Err(e) => {
            let why = NotOpen {
                since,
                ..NotOpen::failed(target, &e)
            };
            not_opened(app, why);
        }
    }
}

/// Opens `target` now, when no ledger is open (a choice in Settings, or a new ledger made
/// where the missing one was): the app continues on it without a restart.
pub async fn open_instead<R: Runtime>(app: &AppHandle<R>, target: &str) {
    let state = app.state::<AppState>();
    let _one = state.opening.lock().await;
    if state.not_open().is_some() {
        open_here(app, target, chrono::Local::now()).await;
    }
}

/// Where an unreadable file was moved, and the new ledger made in its place.
#[derive(Debug, Clone, Serialize, specta::Type)]
pub struct MovedAside {
    /// The old file, kept under its new name.
    pub kept: String,
    /// The new ledger, at the old file's path.
    pub location: String,
    pub status: LedgerStatus,
}

/// Moves the file that is not a database aside, renamed with `.unreadable-<time>` (with any
/// `-wal`, `-shm` or `-journal` beside it, which must not be read into the new ledger), and
/// opens a new ledger at its path. Only for a file that is still not a database; nothing is
/// ever deleted.
pub async fn move_aside<R: Runtime>(app: &AppHandle<R>) -> Result<MovedAside, Error> {
    let state = app.state::<AppState>();
    let _one = state.opening.lock().await;
    let Some(why) = state.not_open() else {
        return Err(Error::invalid_input(
            "ledger",
            "the ledger is open; there is nothing to move aside",
        ));
    };
    let path = PathBuf::from(&why.target);
    if why.problem != Problem::NotADatabase || !is_not_a_database(&path) {
        return Err(Error::invalid_input(
            "ledger",
            format!(
                "{} is not a file that onejob found unreadable; it is left where it is",
                why.location()
            ),
        ));
    }
    let kept = aside_name(&path, chrono::Local::now());
    for companion in ["-wal", "-shm", "-journal"] {
        let from = with_suffix(&path, companion);
        if from.exists() {
            rename(&from, &with_suffix(&kept, companion))?;
        }
    }
    rename(&path, &kept)?;
    open_here(app, &why.target, why.since).await;
    Ok(MovedAside {
        kept: kept.display().to_string(),
        location: why.target,
        status: state.status(),
    })
}

/// `path` with `suffix` added to its file name.
fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    PathBuf::from(name)
}

/// The name an unreadable file is kept under: `.unreadable-<date>-<time>` added, and a number
/// after it when that name is taken.
pub fn aside_name(path: &Path, at: chrono::DateTime<chrono::Local>) -> PathBuf {
    let stamp = at.format("%Y%m%d-%H%M%S");
    let first = with_suffix(path, &format!(".unreadable-{stamp}"));
    let mut candidate = first.clone();
    let mut n = 1;
    while candidate.exists() {
        n += 1;
        candidate = with_suffix(&first, &format!("-{n}"));
    }
    candidate
}

fn rename(from: &Path, to: &Path) -> Result<(), Error> {
    std::fs::rename(from, to).map_err(|e| {
        crate::ledger::storage(
            StorageKind::Failed,
            format!("cannot move {} to {}: {e}", from.display(), to.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_file_is_kept_under_a_name_of_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("onejob.db");
        let at = chrono::Local::now();
        let first = aside_name(&db, at);
        let name = first.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("onejob.db.unreadable-"), "{name}");
        std::fs::write(&first, b"kept").unwrap();
        let second = aside_name(&db, at);
        assert_ne!(first, second, "a name already taken is never reused");
        assert!(second.to_string_lossy().ends_with("-2"), "{second:?}");
    }
}
