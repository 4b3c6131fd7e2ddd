//! The Tauri commands: one-line adapters from the UI's calls to engine calls, scoped to the
//! app's owner.

use onejob_engine::{Error, JobDetail, JobPage, JobStatus, JobsQuery};
use tauri::State;

use crate::AppState;

/// One page of jobs, newest first, optionally of one status; pass the previous page's `next`
/// as `after` to continue.
#[tauri::command]
#[specta::specta]
pub async fn list_jobs(
    state: State<'_, AppState>,
    status: Option<JobStatus>,
    after: Option<String>,
    limit: Option<u32>,
) -> Result<JobPage, Error> {
    let query = JobsQuery {
        status,
        after,
        limit,
    };
    state.engine.jobs(&state.owner, &query).await
}

/// How many jobs need a person: `unknown` ones and those flagged for review.
#[tauri::command]
#[specta::specta]
pub async fn needs_attention(state: State<'_, AppState>) -> Result<u32, Error> {
    state.engine.needs_attention(&state.owner).await
}

/// One job with its attempts and event history.
#[tauri::command]
#[specta::specta]
pub async fn job(state: State<'_, AppState>, id: String) -> Result<JobDetail, Error> {
    state.engine.job(&state.owner, &id).await
}
