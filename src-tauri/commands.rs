//! The Tauri commands: one-line adapters from the UI's calls to engine calls, scoped to the
//! app's owner.

use onejob_engine::contracts::check::Check;
use onejob_engine::{
    default_db_path, Budget, BulkFilter, BulkOperation, BulkRequest, BulkStarted, Error, Job,
    JobAttempt, JobPart, JobSummaryPage, JobsQuery, OpenJobs, Resolution, Risk, Spend, SpendBy,
    Submitted, Verdict,
};
use serde_json::Value;
use tauri::{AppHandle, Runtime, State};

use crate::bench;
use crate::files::{self, SavedFile};
use crate::job_view::JobView;
use crate::ledger::Source;
use crate::status::{self, LedgerStatus, MovedAside};
use crate::view::{BulkProgressed, ContractView, ProviderView, Settings};
use crate::AppState;

/// Submits an intent (JSON text) under the draft's idempotency key: the first call creates
/// the job, a repeat with the same intent returns it with `replayed: true`, a repeat with
/// another intent is `idempotency_conflict`.
#[tauri::command]
#[specta::specta]
pub async fn submit(
    state: State<'_, AppState>,
    key: String,
    intent_json: String,
) -> Result<Submitted, Error> {
    let answer = state
        .engine()?
        .submit(&state.owner, &key, &intent_json)
        .await;
    state.checked(answer).await
}

/// The fingerprint of an intent (JSON text), as a submit would store it: the hex SHA-256 of
/// its canonical JSON. The Submit screen asks it to tell an edit from the same intent
/// rewritten; a bad intent is `invalid_input` naming the field.
#[tauri::command]
#[specta::specta]
pub async fn fingerprint(intent_json: String) -> Result<String, Error> {
    Ok(onejob_engine::intent::parse_intent(&intent_json)?.fingerprint)
}

/// One page of the jobs `filter` matches (every job without one), newest first (oldest first
/// with `oldest_first`): the filter a bulk operation takes, so "select all" acts on what the
/// list shows. Pass the previous page's `next` as `after` to continue in the same direction.
/// Each job comes as the list shows it: its route, never its whole intent or result.
#[tauri::command]
#[specta::specta]
pub async fn list_jobs(
    state: State<'_, AppState>,
    filter: Option<BulkFilter>,
    after: Option<String>,
    limit: Option<u32>,
    oldest_first: Option<bool>,
) -> Result<JobSummaryPage, Error> {
    let query = JobsQuery {
        after,
        limit,
        oldest_first: oldest_first.unwrap_or(false),
        ..JobsQuery::matching(filter.unwrap_or_default())
    };
    let answer = state.engine()?.job_summaries(&state.owner, &query).await;
    state.checked(answer).await
}

/// How many jobs the same filter as `list_jobs` matches: the length of the Jobs list.
#[tauri::command]
#[specta::specta]
pub async fn count_jobs(
    state: State<'_, AppState>,
    filter: Option<BulkFilter>,
) -> Result<u32, Error> {
    let query = JobsQuery::matching(filter.unwrap_or_default());
    let answer = state.engine()?.count_jobs(&state.owner, &query).await;
    state.checked(answer).await
}

/// How many jobs need a person: `unknown` ones and those flagged for review.
#[tauri::command]
#[specta::specta]
pub async fn needs_attention(state: State<'_, AppState>) -> Result<u32, Error> {
    let answer = state.engine()?.needs_attention(&state.owner).await;
    state.checked(answer).await
}

/// One job with its attempts and event history; a large intent, result or event detail comes
/// only as its size and first part; a large intent or result is measured by the ledger, never
/// read whole.
#[tauri::command]
#[specta::specta]
pub async fn job(state: State<'_, AppState>, id: String) -> Result<JobView, Error> {
    let answer = state.engine()?.job_shown(&state.owner, &id).await;
    state.checked(answer).await.map(JobView::of)
}

/// One value of a job, whole, when a person asks to see all of it: its intent, its result, or
/// the detail of one event of its history.
#[tauri::command]
#[specta::specta]
pub async fn job_part(
    state: State<'_, AppState>,
    id: String,
    part: JobPart,
) -> Result<Value, Error> {
    let answer = state.engine()?.job_part(&state.owner, &id, part).await;
    state.checked(answer).await
}

/// Saves one value of a job, whole, as pretty JSON to a new file in the Downloads folder, and
/// says where.
#[tauri::command]
#[specta::specta]
pub async fn save_job_part(
    state: State<'_, AppState>,
    id: String,
    part: JobPart,
) -> Result<SavedFile, Error> {
    let answer = state.engine()?.job_part(&state.owner, &id, part).await;
    let value = state.checked(answer).await?;
    files::save(&files::folder()?, &id, part, &value)
}

/// A person's retry: the next attempt starts now, at `provider` or where the last one ran;
/// `attempt_blocked` while an attempt is open.
#[tauri::command]
#[specta::specta]
pub async fn retry(
    state: State<'_, AppState>,
    job_id: String,
    provider: Option<String>,
) -> Result<JobAttempt, Error> {
    let answer = state
        .engine()?
        .retry(&state.owner, &job_id, provider.as_deref())
        .await;
    state.checked(answer).await
}

/// A person's verdict on an attempt: "it went through", "it did not happen", or "abandon".
#[tauri::command]
#[specta::specta]
pub async fn resolve(
    state: State<'_, AppState>,
    attempt_id: String,
    verdict: Verdict,
    resolution: Resolution,
) -> Result<JobAttempt, Error> {
    let answer = state
        .engine()?
        .resolve(&state.owner, &attempt_id, verdict, resolution)
        .await;
    state.checked(answer).await
}

/// Cancels a job; an answer that arrives afterwards is dropped and flagged for review.
#[tauri::command]
#[specta::specta]
pub async fn cancel(state: State<'_, AppState>, job_id: String) -> Result<Job, Error> {
    let answer = state.engine()?.cancel(&state.owner, &job_id).await;
    state.checked(answer).await
}

/// Starts a bulk operation on every job the request's filter matches now, under the key the
/// confirmation made as it opened (SPEC §16): fixes its set and changes nothing yet; the same
/// key again answers the same operation (`replayed`). A dry run counts and records nothing.
#[tauri::command]
#[specta::specta]
pub async fn bulk_start(
    state: State<'_, AppState>,
    key: String,
    request: BulkRequest,
) -> Result<BulkStarted, Error> {
    let answer = state
        .engine()?
        .bulk_start(&state.owner, &key, &request)
        .await;
    state.checked(answer).await
}

/// Decides what is left of bulk operation `id`, sending `BulkProgressed` after each batch, and
/// answers it once every job is decided, with the ones skipped and why.
#[tauri::command]
#[specta::specta]
pub async fn bulk_run<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    id: String,
) -> Result<BulkOperation, Error> {
    use tauri_specta::Event;
    let answer = state
        .engine()?
        .bulk_run(&state.owner, &id, |progress| {
            // A window that went away misses a progress line, never the operation.
            let _ = BulkProgressed {
                id: id.clone(),
                progress,
            }
            .emit(&app);
        })
        .await;
    state.checked(answer).await
}

/// Discards bulk operation `id` while none of its jobs is decided: the person declined the
/// confirmation that fixed its set. One that decided a job is kept (`invalid_transition`).
#[tauri::command]
#[specta::specta]
pub async fn bulk_discard(state: State<'_, AppState>, id: String) -> Result<(), Error> {
    let answer = state.engine()?.bulk_discard(&state.owner, &id).await;
    state.checked(answer).await
}

/// What the owner's attempts cost (SPEC §17), by day or provider, of those sent since `since`
/// (a date or an RFC 3339 time; every one without it), in `currency`. Amounts of two currencies
/// are never added: where attempts were charged in several and none is named, the error is
/// `invalid_input` naming them, for the window to offer a choice.
#[tauri::command]
#[specta::specta]
pub async fn spend(
    state: State<'_, AppState>,
    by: SpendBy,
    since: Option<String>,
    currency: Option<String>,
) -> Result<Spend, Error> {
    let answer = state
        .engine()?
        .spend(Some(&state.owner), by, since, currency.as_deref())
        .await;
    state.checked(answer).await
}

/// What weakens the promise on the ledger in use (SPEC §14), as `onejob doctor` names it: on
/// PostgreSQL, standbys none of which is synchronous (a failover could lose acknowledged jobs
/// and send attempts twice), a clock far from the server's, and the like; none when it holds.
#[tauri::command]
#[specta::specta]
pub async fn ledger_risks(state: State<'_, AppState>) -> Result<Vec<Risk>, Error> {
    let answer = state.engine()?.doctor().await;
    state.checked(answer).await.map(|diagnosis| diagnosis.risks)
}

/// Every budget (SPEC §17), by name, each with what it holds in its period now. The window is
/// the local person, as the command line is: every owner's budgets, not only the app's.
#[tauri::command]
#[specta::specta]
pub async fn budgets(state: State<'_, AppState>) -> Result<Vec<Budget>, Error> {
    let answer = state.engine()?.budgets(None).await;
    state.checked(answer).await
}

/// Sets budget `name` from its JSON (`{"limit", "currency", "period", "provider"?, "owner"?}`),
/// replacing one of the same name, and returns it as listed. Bad input is `invalid_input`
/// naming the field, and changes nothing.
#[tauri::command]
#[specta::specta]
pub async fn set_budget(
    state: State<'_, AppState>,
    name: String,
    config_json: String,
) -> Result<Budget, Error> {
    let answer = state.engine()?.set_budget(&name, &config_json, None).await;
    state
        .checked(answer)
        .await
        .map(|(budget, _replaced)| budget)
}

/// Removes budget `name`; `not_found` when there is none. A job it kept back still waits for
/// the time it was given (its `not_before`).
#[tauri::command]
#[specta::specta]
pub async fn remove_budget(state: State<'_, AppState>, name: String) -> Result<(), Error> {
    let answer = state.engine()?.remove_budget(&name, None).await;
    state.checked(answer).await
}

/// Every configured provider, by name: its configuration (never a key) and, for the
/// sandbox, its fault dials.
#[tauri::command]
#[specta::specta]
pub async fn providers(state: State<'_, AppState>) -> Result<Vec<ProviderView>, Error> {
    let engine = state.engine()?;
    let answer = async { ProviderView::all(&engine, engine.providers().await?).await }.await;
    state.checked(answer).await
}

/// Adds a provider from its JSON configuration, replacing one of the same name.
#[tauri::command]
#[specta::specta]
pub async fn save_provider(
    state: State<'_, AppState>,
    config_json: String,
) -> Result<ProviderView, Error> {
    let engine = state.engine()?;
    let answer = async {
        let (provider, _) = engine.add_provider(&config_json).await?;
        ProviderView::of(&engine, provider).await
    }
    .await;
    state.checked(answer).await
}

/// Stores a provider's API key in the OS keyring, replacing any before. The key is never
/// logged, stored in the database, or sent back; the reply says only that it was stored.
#[tauri::command]
#[specta::specta]
pub async fn set_provider_key(
    state: State<'_, AppState>,
    name: String,
    key: String,
) -> Result<(), Error> {
    let answer = state.engine()?.set_provider_key(&name, &key).await;
    state.checked(answer).await
}

/// Removes a provider's API key from the OS keyring; done when there is none.
#[tauri::command]
#[specta::specta]
pub async fn clear_provider_key(state: State<'_, AppState>, name: String) -> Result<(), Error> {
    let answer = state.engine()?.clear_provider_key(&name).await;
    state.checked(answer).await
}

/// How many open jobs (`queued`, `running`, `unknown`, of every owner) name a provider: what
/// removing it would affect.
#[tauri::command]
#[specta::specta]
pub async fn provider_in_use(state: State<'_, AppState>, name: String) -> Result<OpenJobs, Error> {
    let answer = state.engine()?.jobs_naming_provider(&name).await;
    state.checked(answer).await
}

/// Removes a provider; jobs and attempts that name it keep the name.
#[tauri::command]
#[specta::specta]
pub async fn remove_provider(state: State<'_, AppState>, name: String) -> Result<(), Error> {
    let answer = state.engine()?.remove_provider(&name).await;
    state.checked(answer).await
}

/// Every contract, by name, with its last check against each provider it was checked with.
#[tauri::command]
#[specta::specta]
pub async fn contracts(state: State<'_, AppState>) -> Result<Vec<ContractView>, Error> {
    let engine = state.engine()?;
    let answer = async {
        let mut views = Vec::new();
        for contract in engine.contracts().await? {
            let checks = engine.contract_checks(&contract.name).await?;
            views.push(ContractView::new(contract, checks));
        }
        Ok(views)
    }
    .await;
    state.checked(answer).await
}

/// Adds a contract from its JSON (`{"name", "schema", "template": {"system", "user"},
/// "samples"}`), replacing the one of that name; a change of content makes every earlier check
/// stop counting. Bad input is `invalid_input` naming the field, and changes nothing.
#[tauri::command]
#[specta::specta]
pub async fn save_contract(
    state: State<'_, AppState>,
    contract_json: String,
) -> Result<ContractView, Error> {
    let engine = state.engine()?;
    let answer = async {
        let added = engine.add_contract(&contract_json).await?;
        let checks = engine.contract_checks(&added.contract.name).await?;
        Ok(ContractView::new(added.contract, checks))
    }
    .await;
    state.checked(answer).await
}

/// How many open jobs (`queued`, `running`, `unknown`, of every owner) name a contract: what
/// removing it would affect.
#[tauri::command]
#[specta::specta]
pub async fn contract_in_use(state: State<'_, AppState>, name: String) -> Result<OpenJobs, Error> {
    let answer = state.engine()?.jobs_naming_contract(&name).await;
    state.checked(answer).await
}

/// Removes a contract and its checks; jobs keep its name, and an open one fails
/// `misconfigured` at its next claim.
#[tauri::command]
#[specta::specta]
pub async fn remove_contract(state: State<'_, AppState>, name: String) -> Result<(), Error> {
    let answer = state.engine()?.remove_contract(&name).await;
    state.checked(answer).await
}

/// Runs a contract check: every sample is sent to the provider at temperature 0, and the stored
/// check comes back.
#[tauri::command]
#[specta::specta]
pub async fn check_contract(
    state: State<'_, AppState>,
    contract: String,
    provider: String,
) -> Result<Check, Error> {
    let answer = state.engine()?.check_contract(&contract, &provider).await;
    state.checked(answer).await
}

/// Where the app keeps its database, for the Settings screen.
#[tauri::command]
#[specta::specta]
pub async fn settings(state: State<'_, AppState>) -> Result<Settings, Error> {
    Ok(Settings::of(&state))
}

/// Checks a ledger (a file path or a `postgres://` URL without a password) by opening it, and
/// saves it as the one the app opens from its next start; empty text goes back to the default
/// file. `ONEJOB_DB`, when set, still wins. When no ledger is open, the app continues on the
/// chosen one at once.
#[tauri::command]
#[specta::specta]
pub async fn choose_ledger<R: Runtime>(
    app: AppHandle<R>,
    state: State<'_, AppState>,
    location: String,
) -> Result<Settings, Error> {
    let chosen = crate::ledger::choose(&location).await?;
    if state.not_open().is_some() {
        let (target, source) = match chosen {
            Some(chosen) => (chosen, Source::Settings),
            None => (default_db_path().display().to_string(), Source::Default),
        };
        crate::ledger::opened_from(source);
        status::open_instead(&app, &target).await;
    }
    Ok(Settings::of(&state))
}

/// The ledger's status: open, open but unreachable since a time, or not open and why.
#[tauri::command]
#[specta::specta]
pub async fn ledger_status(state: State<'_, AppState>) -> Result<LedgerStatus, Error> {
    Ok(state.status())
}

/// "Try again": opens the ledger that could not be opened, now; the app continues on it when
/// it opens. The status after the try.
#[tauri::command]
#[specta::specta]
pub async fn try_ledger_again<R: Runtime>(app: AppHandle<R>) -> Result<LedgerStatus, Error> {
    Ok(status::try_again(&app).await)
}

/// "Move it aside and start a new ledger": the file that is not a database is renamed beside
/// itself (`.unreadable-<time>`, never deleted) and a new ledger is made and opened at its
/// path.
#[tauri::command]
#[specta::specta]
pub async fn move_ledger_aside<R: Runtime>(app: AppHandle<R>) -> Result<MovedAside, Error> {
    status::move_aside(&app).await
}

/// Sets how many attempts the app sends at once (1 to 1024), saved for the next start and
/// applied to the running executor now: with fewer, attempts already out finish first.
#[tauri::command]
#[specta::specta]
pub async fn set_concurrency(state: State<'_, AppState>, n: u32) -> Result<Settings, Error> {
    crate::sending::save(n)?;
    if let Some(executor) = state.executor() {
        executor.set_max_in_flight(n as usize);
    }
    Ok(Settings::of(&state))
}

/// Prints the wall-clock time (Unix ms) at which the window first showed the Jobs screen's
/// content, once, when `ONEJOB_REPORT_FIRST_PAINT=1`: the cold-start benchmark's end mark; and
/// then, for the benchmark's time to the Job screen, opens the job it names (see `bench`).
#[tauri::command]
#[specta::specta]
pub fn first_paint() {
    if reporting_paint() {
        println!("first-paint-epoch-ms {}", bench::epoch_ms());
        bench::after_first_paint();
    }
}

/// Prints the wall-clock time (Unix ms) at which the Job screen first showed a job, when
/// `ONEJOB_REPORT_FIRST_PAINT=1`: the end mark of the benchmark's time to the Job screen.
#[tauri::command]
#[specta::specta]
pub fn job_paint() {
    if reporting_paint() {
        println!("job-paint-epoch-ms {}", bench::epoch_ms());
    }
}

fn reporting_paint() -> bool {
    std::env::var_os("ONEJOB_REPORT_FIRST_PAINT").is_some_and(|v| v == "1")
}
