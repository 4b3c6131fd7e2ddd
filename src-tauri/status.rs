//! Whether the app's ledger is open and answering, and what the window says when it is not:
//! a ledger that could not be opened at start (why, and what can be done), and a ledger that
//! stopped answering while the app ran (since when; retried until it answers again).
//!
//! A ledger that cannot be opened never stops the app: the window opens and says which
//! ledger, what failed and what to check. A PostgreSQL server that does not answer is tried
//! again in the background and the app continues by itself once it does; a file that is not
//! a database is left as it is until a person asks to move it aside.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use onejob_engine::error::StorageKind;
use onejob_engine::{Engine, Error};
use serde::{Deserialize, Serialize};
use tauri::{AppHandle, Manager, Runtime};
use tauri_specta::Event;

use crate::view::LedgerChanged;
use crate::{AppState, OWNER};

/// The first bytes of every SQLite database file.
const SQLITE_HEADER: &[u8; 16] = b"SQLite format 3\0";

/// The longest wait between two tries of a ledger that does not answer.
const LONGEST_WAIT: Duration = Duration::from_secs(5);

/// How often an open ledger that answered is asked for a small read, to notice that it
/// stopped while nothing else reads.
const HEARTBEAT: Duration = Duration::from_secs(3);

/// What the window shows about its ledger; sent whenever it changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type, tauri_specta::Event)]
pub struct LedgerStatus {
    /// The ledger: the file, or the PostgreSQL URL without its password.
    pub location: String,
    /// Whether it is a PostgreSQL ledger shared with other hosts.
    pub shared: bool,
    pub state: LedgerState,
}

/// Open and answering, open but not answering, or not open.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(tag = "is", rename_all = "snake_case")]
pub enum LedgerState {
    /// Open, and its last read answered.
    Open,
    /// Open, but it stopped answering at `since` (RFC 3339); tried again until it answers.
    Unreachable {
        since: String,
        /// What failed, in the engine's words.
        message: String,
    },
    /// Not open since `since` (RFC 3339): `problem` says why, `message` what failed;
    /// `retrying` when it is tried again in the background.
    NotOpen {
        problem: Problem,
        since: String,
        message: String,
        retrying: bool,
    },
}

/// Why a ledger is not open, for what the window offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[serde(rename_all = "snake_case")]
pub enum Problem {
    /// The file chosen in Settings is not there (an unmounted drive, a removed file).
    Missing,
    /// The file is there but is not a database: it can be moved aside for a new ledger.
    NotADatabase,
    /// The PostgreSQL server did not answer: tried again in the background.
    Unreachable,
    /// Anything else: a refused login, a missing database, a damaged schema.
    Failed,
}

/// A ledger that is not open, and why.
#[derive(Debug, Clone)]
pub struct NotOpen {
    /// What to open: the file or URL as named, which may carry a password (never shown).
    pub target: String,
    pub problem: Problem,
    pub message: String,
    pub since: chrono::DateTime<chrono::Local>,
}

impl NotOpen {
    /// The file chosen in Settings at `target` is gone.
    pub fn missing(target: &str) -> NotOpen {
        NotOpen {
            target: target.to_owned(),
            problem: Problem::Missing,
            message: format!(
                "the file chosen in Settings, {target}, is not there (was its drive unmounted, or \
                 the file moved?); onejob did not make a new, empty ledger in its place"
            ),
            since: chrono::Local::now(),
        }
    }

    /// Opening `target` failed with `error`: why, as far as can be told without changing it.
    pub fn failed(target: &str, error: &Error) -> NotOpen {
        let message = error.to_string();
        let problem = if onejob_engine::store::postgres::is_url(target) {
            // A server that refused or did not answer the connection is tried again.
            if error.storage_kind() == Some(StorageKind::Unreachable) {
                Problem::Unreachable
            } else {
                Problem::Failed
            }
        } else if is_not_a_database(Path::new(target)) {
            Problem::NotADatabase
        } else {
            Problem::Failed
        };
        NotOpen {
            target: target.to_owned(),
            problem,
            message,
            since: chrono::Local::now(),
        }
    }

    /// The ledger as it may be shown: a URL without its password.
    pub fn location(&self) -> String {
        onejob_engine::store::postgres::redact(&self.target)
    }

    /// The error every command but Settings' answers while no ledger is open.
    pub fn error(&self) -> Error {
        let kind = match self.problem {
            Problem::Unreachable => StorageKind::Unreachable,
            Problem::Missing | Problem::NotADatabase | Problem::Failed => StorageKind::Failed,
        };
        crate::ledger::storage(
            kind,
            format!(
            "no ledger is open: the ledger at {} could not be opened ({}); the window says what \
             can be done",
            self.location(),
            self.message
        ),
        )
    }
}

/// Whether the file at `path` is there, holds something, and is not a SQLite database. An
/// empty file is a new database to SQLite, so it does not count.
pub fn is_not_a_database(path: &Path) -> bool {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let mut head = Vec::with_capacity(SQLITE_HEADER.len());
    match file
        .by_ref()
        .take(SQLITE_HEADER.len() as u64)
        .read_to_end(&mut head)
    {
        Ok(0) | Err(_) => false,
        Ok(_) => head.as_slice() != SQLITE_HEADER.as_slice(),
    }
}

/// A ledger that stopped answering while the app ran: since when, and what failed first.
struct Down {
    since: chrono::DateTime<chrono::Local>,
    message: String,
}

/// The running ledger's outages: set when a command's storage error is confirmed by a read
/// that fails too, cleared by the watcher ([`watch_outages`]) once a read answers again.
#[derive(Default)]
pub struct Outage {
    down: Mutex<Option<Down>>,
    /// Wakes the watcher when an outage begins.
    began: tokio::sync::Notify,
    /// One confirming read at a time: the others wait for its verdict.
    checking: tokio::sync::Mutex<()>,
}

impl Outage {
    /// Since when and why the ledger has not answered, if it has not.
    fn current(&self) -> Option<(chrono::DateTime<chrono::Local>, String)> {
        let down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        down.as_ref().map(|d| (d.since, d.message.clone()))
    }

    fn begin(&self, message: &str) {
        let mut down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        if down.is_none() {
            *down = Some(Down {
                since: chrono::Local::now(),
                message: message.to_owned(),
            });
            self.began.notify_one();
        }
    }

    fn end(&self) -> bool {
        let mut down = self.down.lock().unwrap_or_else(|p| p.into_inner());
        down.take().is_some()
    }
}

/// Whether the ledger answers a small read (the "needs attention" count).
async fn answers(engine: &Engine) -> bool {
    engine.needs_attention(OWNER).await.is_ok()
}

impl AppState {
    /// The status the window shows.
    pub fn status(&self) -> LedgerStatus {
        let location = self.location();
        let shared = onejob_engine::store::postgres::is_url(&location);
        let state = match self.not_open() {
            Some(why) => LedgerState::NotOpen {
                problem: why.problem,
                since: why.since.to_rfc3339(),
                message: why.message,
                retrying: why.problem == Problem::Unreachable,
            },
            None => match self.outage.current() {
                Some((since, message)) => LedgerState::Unreachable {
                    since: since.to_rfc3339(),
                    message,
                },
                None => LedgerState::Open,
            },
        };
        LedgerStatus {
            location,
            shared,
            state,
        }
    }

    /// A command's answer, as the window should see it: a storage error from a ledger that
    /// does not answer a read either becomes an outage (the banner) and says so in words.
    /// Nothing is queued for later: what failed failed, and the person is told.
    pub async fn checked<T>(&self, result: Result<T, Error>) -> Result<T, Error> {
        let message = match &result {
            Err(Error::Storage { message, .. }) => message.clone(),
            _ => return result,
        };
        if self.outage.current().is_none() {
            let _one = self.outage.checking.lock().await;
            if self.outage.current().is_none() {
                let Ok(engine) = self.engine() else {
                    return result;
                };
                if answers(&engine).await {
                    return result;
                }
                self.outage.begin(&message);
            }
        }
        let Some((since, _)) = self.outage.current() else {
            return result;
        };
        Err(crate::ledger::storage(
            StorageKind::Unreachable,
            format!(
            "the ledger at {} is unreachable since {}; onejob keeps trying and the window says \
             when it answers again. This was not done, or its answer was lost: do it again then \
             (a submit of the same draft is recorded once, however often it is sent). What \
             failed: {message}",
            self.location(),
            since.format("%H:%M:%S")
        ),
        ))
    }
}

/// Watches for outages for as long as the app runs. While the ledger answers, it asks for a
/// small read every [`HEARTBEAT`]: the change feed does not say when its server went away,
/// and an idle window reads nothing. Once an outage begins (found so, or by a command) it
/// says so to the window, tries a read again, a little later each time (at most
/// [`LONGEST_WAIT`] apart), and when one answers says so and asks the window to read
/// everything again.
pub async fn watch_outages<R: Runtime>(app: AppHandle<R>) {
    loop {
        let state = app.state::<AppState>();
        tokio::select! {
            () = state.outage.began.notified() => {}
            () = tokio::time::sleep(HEARTBEAT) => {
                if let Ok(engine) = state.engine() {
                    if let Err(e) = engine.needs_attention(OWNER).await {
                        state.outage.begin(&e.to_string());
                    }
                }
            }
        }
        if state.outage.current().is_none() {
            continue;
        }
        announce(&app);
        let mut wait = Duration::from_millis(500);
        loop {
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(LONGEST_WAIT);
            let Ok(engine) = state.engine() else {
                state.outage.end();
                break;
            };
            if answers(&engine).await {
                state.outage.end();
                announce(&app);
                refresh(&app);
                break;
            }
        }
    }
}

/// Tells the window the ledger's status.
pub fn announce<R: Runtime>(app: &AppHandle<R>) {
    let status = app.state::<AppState>().status();
    if let Err(e) = status.emit(app) {
        eprintln!("onejob: cannot tell the window the ledger's status: {e}");
    }
}

/// Asks the window to read what it shows again.
fn refresh<R: Runtime>(app: &AppHandle<R>) {
    if let Err(e) = (LedgerChanged { seq: 0 }).emit(app) {
        eprintln!("onejob: cannot announce a ledger change: {e}");
    }
}

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
    fn only_a_file_with_something_other_than_sqlite_in_it_is_not_a_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name);
        std::fs::write(path("noise"), b"\x07\x99 not a database at all").unwrap();
        std::fs::write(path("short"), b"abc").unwrap();
        std::fs::write(path("empty"), b"").unwrap();
        let mut sqlite = SQLITE_HEADER.to_vec();
        sqlite.extend([0u8; 84]);
        std::fs::write(path("sqlite"), &sqlite).unwrap();
        assert!(is_not_a_database(&path("noise")));
        assert!(is_not_a_database(&path("short")));
        assert!(!is_not_a_database(&path("empty")), "SQLite makes one there");
        assert!(!is_not_a_database(&path("sqlite")));
        assert!(!is_not_a_database(&path("absent")));
    }

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
