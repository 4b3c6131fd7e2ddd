//! Bulk operations (SPEC §16 "Many at once"): a person's action applied to every job a filter
//! matched when the operation started. The set is fixed in one statement as the operation is
//! recorded; each job is then decided by the same guarded writes as alone, a few dozen jobs per
//! short transaction, and its item is decided in the same transaction, so a run killed midway
//! and repeated under its key finishes what is left and changes nothing twice.

use serde_json::Value;

use crate::bulk::BulkStarted;
use crate::bulk::{
    BulkAction, BulkOperation, BulkProgress, BulkRequest, BulkSkip, BULK_PROVIDERS_NAMED,
};
use crate::error::{ConflictDetails, Error, Result};
use crate::input;
use crate::intent::{canonical_sha256, validate_key, validate_owner};
use crate::job::JobStatus;
use crate::model::{Resolution, Verdict};
use crate::store::bulk::{self as bulk_rows, BulkRow, NewBulk, FIRST_CURSOR};
use crate::store::{attempts as attempt_rows, jobs as job_rows, providers as provider_rows};
use crate::store::{Handle, Tx};
use crate::{AttemptState, Engine};

use super::person::{cancel_in, resolve_in, retry_in};
use super::read::{blank_is_none, ListFilter};
use super::{finish, owned_job_row};

mod request;

/// Jobs decided per transaction at most: few, so that a write arriving meanwhile waits for a
/// small commit (on PostgreSQL, another host's write to one of them), and more than one, so
/// that an operation alone does not pay a commit per job. On SQLite a batch also ends early,
/// after a job, when another write of this process waits (ADR 0053), and waiting submits ride
/// in its commit (ADR 0057).
const BATCH: u32 = 8;
/// Skipped jobs read per statement when an operation is shown.
const SKIPPED_PAGE: u32 = 1000;
/// The outcome of a job the action changed.
const CHANGED: &str = "changed";

impl Engine {
    /// Starts a bulk operation under the owner's `key`: fixes its set of jobs (those that pass
    /// the filter now) and records it, changing no job yet; [`Engine::bulk_run`] decides them.
    /// The same key again answers the operation it started (`replayed`), as far as it has come;
    /// another request under it is `idempotency_conflict` naming the operation. A dry run
    /// counts what would match and records nothing.
    pub async fn bulk_start(
        &self,
        owner: &str,
        key: &str,
        request: &BulkRequest,
    ) -> Result<BulkStarted> {
        validate_owner(owner)?;
        validate_key(key)?;
        let checked = self.check_bulk(request).await?;
        let filter = checked.filter.rows();
        let action = checked.request.action;
        if request.dry_run {
            let mut conn = self.read().await?;
            let matched = job_rows::count(&mut conn, owner, &filter).await?;
            return Ok(BulkStarted {
                operation: BulkOperation {
                    id: None,
                    key: None,
                    action,
                    matched: count(matched),
                    providers: Vec::new(),
                    changed: 0,
                    skipped: Vec::new(),
                    done: true,
                    dry_run: true,
                },
                replayed: false,
            });
        }
        let params = serde_json::to_string(&checked.request)
            .map_err(|e| Error::internal(format!("a bulk request as JSON: {e}")))?;
        // A key taken by an operation that committed while this one ran is read on the second turn.
        for _ in 0..2 {
            let mut tx = self.begin().await?;
            // `None` when the key was taken meanwhile: what this turn wrote is rolled back.
            let outcome = async {
                if let Some(row) = bulk_rows::by_key(&mut tx, owner, key).await? {
                    if row.fingerprint != checked.fingerprint {
                        return Err(bulk_conflict(key, &row.id));
                    }
                    let operation = operation_of(&mut tx, row).await?;
                    return Ok(Some(BulkStarted {
                        operation,
                        replayed: true,
                    }));
                }
                let id = uuid::Uuid::now_v7().to_string();
                let new = NewBulk {
                    id: &id,
                    owner,
                    key,
                    fingerprint: &checked.fingerprint,
                    action: action.as_str(),
                    params: &params,
                };
                if !bulk_rows::insert(&mut tx, &new).await? {
                    return Ok(None);
                }
                let matched = bulk_rows::fill(&mut tx, &id, owner, &filter).await?;
                bulk_rows::finish(&mut tx, &id).await?;
                let providers = bulk_rows::providers(&mut tx, &id, BULK_PROVIDERS_NAMED).await?;
                Ok(Some(BulkStarted {
                    operation: BulkOperation {
                        id: Some(id),
                        key: Some(key.to_owned()),
                        action,
                        matched: count(matched),
                        providers,
                        changed: 0,
                        skipped: Vec::new(),
                        done: matched == 0,
                        dry_run: false,
                    },
                    replayed: false,
                }))
            }
            .await;
            match outcome {
                Ok(None) => tx.rollback().await?,
                Ok(Some(started)) => return finish(tx, Ok(started)).await,
                Err(e) => return finish(tx, Err(e)).await,
            }
        }
        Err(Error::internal(format!(
            "the bulk key {key:?} was taken and then not found"
        )))
    }

    /// Decides every job of the owner's operation `id` not yet decided, a batch per short
    /// transaction, calling `progress` after each; returns the operation once all are. Each
    /// job is changed by the same guarded writes as the single action, its events naming the
    /// operation, or skipped with the code of the error that action gave (it moved meanwhile).
    /// Run twice at once, or again after a crash, no job is decided twice.
    pub async fn bulk_run(
        &self,
        owner: &str,
        id: &str,
        mut progress: impl FnMut(BulkProgress) + Send,
    ) -> Result<BulkOperation> {
        let (id, request) = self.bulk_request(owner, id).await?;
        let mut seen = {
            let mut conn = self.read().await?;
            let counts = bulk_rows::counts(&mut conn, &id).await?;
            BulkProgress {
                matched: count(counts.matched),
                changed: count(counts.changed),
                skipped: count(counts.skipped),
                decided: count(counts.changed + counts.skipped),
            }
        };
        let mut cursor = FIRST_CURSOR.to_owned();
        loop {
            let ids = {
                let mut conn = self.read().await?;
                bulk_rows::undecided(&mut conn, &id, &cursor, BATCH).await?
            };
            if ids.is_empty() {
                break;
            }
            let (changed, skipped, reached) = self.bulk_batch(owner, &id, &request, &ids).await?;
            let last = ids[reached.clamp(1, ids.len()) - 1].clone();
            self.wake_executor();
            seen.changed += changed;
            seen.skipped += skipped;
            seen.decided += changed + skipped;
            progress(seen);
            cursor = last;
        }
        let mut tx = self.begin().await?;
        let outcome = bulk_rows::finish(&mut tx, &id).await.map_err(Error::from);
        finish(tx, outcome).await?;
        self.bulk_operation(owner, &id).await
    }

    /// [`Engine::bulk_start`], then [`Engine::bulk_run`] to its end, in one call. A replayed
    /// key finishes what is left of its operation. Only tests and benchmarks call it (through
    /// `testing`); the faces start an operation and run it apart.
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub(crate) async fn bulk(
        &self,
        owner: &str,
        key: &str,
        request: &BulkRequest,
        progress: impl FnMut(BulkProgress) + Send,
    ) -> Result<BulkStarted> {
        let started = self.bulk_start(owner, key, request).await?;
        let Some(id) = started.operation.id.clone() else {
            return Ok(started);
        };
        let operation = self.bulk_run(owner, &id, progress).await?;
        Ok(BulkStarted {
            operation,
            replayed: started.replayed,
        })
    }

    /// The owner's bulk operation `id` as far as it has come, with every job skipped so far;
    /// another owner's is `not_found`.
    pub async fn bulk_operation(&self, owner: &str, id: &str) -> Result<BulkOperation> {
        let id = operation_id(owner, id)?;
        let mut conn = self.read().await?;
        let row = owned_operation(&mut conn, owner, &id).await?;
        operation_of(&mut conn, row).await
    }

    /// Discards the owner's operation `id` while none of its jobs is decided: a person who
    /// declined the confirmation that fixed its set. Its record and its set go, and its key is
    /// free again. One that has decided a job, or is deciding one now, is kept
    /// (`invalid_transition`): what it did stays on record.
    pub async fn bulk_discard(&self, owner: &str, id: &str) -> Result<()> {
        let id = operation_id(owner, id)?;
        let mut tx = self.begin().await?;
        let outcome = async {
            let row = owned_operation(&mut tx, owner, &id).await?;
            // Taken first, so that a run deciding a job meanwhile either has (and is seen here)
            // or finds it decided.
            let withdrawn = bulk_rows::withdraw(&mut tx, &row.id).await?;
            let counts = bulk_rows::counts(&mut tx, &row.id).await?;
            let decided =
                counts.changed + counts.skipped - i64::try_from(withdrawn).unwrap_or(i64::MAX);
            if decided > 0 {
                return Err(Error::invalid_transition(
                    "bulk operation",
                    &id,
                    &row.state,
                    "discarded",
                ));
            }
            bulk_rows::remove(&mut tx, &row.id).await?;
            Ok(())
        }
        .await;
        finish(tx, outcome).await
    }

    /// The owner's operation's id and request, or `not_found`.
    async fn bulk_request(&self, owner: &str, id: &str) -> Result<(String, BulkRequest)> {
        let id = operation_id(owner, id)?;
        let mut conn = self.read().await?;
        let row = owned_operation(&mut conn, owner, &id).await?;
        let request = serde_json::from_str(&row.params).map_err(|e| {
            Error::internal(format!(
                "bulk operation {id} holds an unreadable request: {e}"
            ))
        })?;
        Ok((id, request))
    }

    /// Decides the jobs `ids` of operation `op`, in order, in one transaction, each behind a
    /// savepoint so that one the action refuses leaves nothing of its own but its code. Ends
    /// early, after a job, when another write of this process waits for the writer (SQLite):
    /// that write waits for one job, not for the batch. Submits waiting for the writer then
    /// ride in this transaction (ADR 0057): committed by its commit, they wait for no commit
    /// of the batch's own. (changed, skipped, how many of `ids` it reached).
    async fn bulk_batch(
        &self,
        owner: &str,
        op: &str,
        request: &BulkRequest,
        ids: &[String],
    ) -> Result<(u32, u32, usize)> {
        let (mut changed, mut skipped, mut reached) = (0, 0, 0);
        let mut tx = self.begin().await?;
        let outcome = async {
            tx.savepoint().await?;
            for job_id in ids {
                if reached > 0 && tx.others_waiting() {
                    break;
                }
                reached += 1;
                // Taking the item first makes a second run of the same operation wait here,
                // then pass.
                if !bulk_rows::decide(&mut tx, op, job_id, CHANGED).await? {
                    continue;
                }
                job_rows::lock(&mut tx, std::slice::from_ref(job_id), &[]).await?;
                match apply(&mut tx, owner, op, request, job_id).await {
                    Ok(None) => changed += 1,
                    Ok(Some(refused)) => {
                        bulk_rows::recode(&mut tx, op, job_id, refused).await?;
                        skipped += 1;
                    }
                    Err(e @ Error::Storage { .. }) => return Err(e),
                    Err(e) => {
                        tx.rollback_to_savepoint().await?;
                        bulk_rows::decide(&mut tx, op, job_id, e.code()).await?;
                        skipped += 1;
                    }
                }
                tx.next_savepoint().await?;
            }
            tx.release_savepoint().await?;
            Ok((changed, skipped, reached))
        }
        .await;
        // Taken only once the batch's own work stands, so a batch that fails fails no submit.
        let riders = match outcome {
            Ok(_) if tx.others_waiting() => self.submits.riders(),
            _ => None,
        };
        match riders {
            Some(riders) => riders.ride(tx, outcome, &self.work).await,
            None => finish(tx, outcome).await,
        }
    }
}

/// A bulk operation's id as given, checked, with its owner's name.
fn operation_id(owner: &str, id: &str) -> Result<String> {
    validate_owner(owner)?;
    input::id("id", "bulk operation", id)
}

/// The owner's operation `id`; another owner's is `not_found`.
async fn owned_operation(h: &mut impl Handle, owner: &str, id: &str) -> Result<BulkRow> {
    bulk_rows::owned(h, owner, id)
        .await?
        .ok_or_else(|| Error::not_found("bulk operation", id))
}

/// The action on one job, on a transaction holding its lock: `None` when it changed the job,
/// the code of a refusal whose writes stand, or the error that refused it.
async fn apply(
    tx: &mut Tx,
    owner: &str,
    op: &str,
    request: &BulkRequest,
    job_id: &str,
) -> Result<Option<&'static str>> {
    match request.action {
        BulkAction::Cancel => cancel_in(tx, owner, job_id, Some(op)).await.map(|()| None),
        BulkAction::Retry => retry_in(tx, owner, job_id, request.provider.as_deref(), Some(op))
            .await
            .map(|_| None),
        BulkAction::Resolve => {
            let verdict = request.verdict.unwrap_or(Verdict::Abandoned);
            let job = owned_job_row(tx, owner, job_id).await?.into_job()?;
            let open = attempt_rows::open_for_job(tx, job_id).await?;
            let row = match open {
                Some(row) if row.state()? == AttemptState::Unknown => row,
                // It was settled meanwhile (an answer, a lookup, a person): nothing to resolve.
                _ => {
                    return Err(Error::invalid_transition(
                        "job",
                        job_id,
                        job.status.as_str(),
                        "resolved",
                    ))
                }
            };
            let resolved = resolve_in(tx, &row, verdict, &Resolution::default(), Some(op)).await?;
            Ok(resolved.refusal.map(|e| e.code()))
        }
    }
}

/// An operation row with its counts and its skipped jobs, read on `conn`.
async fn operation_of(conn: &mut impl Handle, row: BulkRow) -> Result<BulkOperation> {
    let counts = bulk_rows::counts(conn, &row.id).await?;
    let providers = bulk_rows::providers(conn, &row.id, BULK_PROVIDERS_NAMED).await?;
    let mut skipped = Vec::new();
    let mut cursor = FIRST_CURSOR.to_owned();
    loop {
        let page = bulk_rows::skipped(conn, &row.id, &cursor, SKIPPED_PAGE).await?;
        let Some((last, _)) = page.last().cloned() else {
            break;
        };
        skipped.extend(
            page.into_iter()
                .map(|(job_id, code)| BulkSkip { job_id, code }),
        );
        cursor = last;
    }
    let action = match row.action.as_str() {
        "resolve" => BulkAction::Resolve,
        "cancel" => BulkAction::Cancel,
        "retry" => BulkAction::Retry,
        other => {
            return Err(Error::internal(format!(
                "bulk operation {} holds an unknown action {other:?}",
                row.id
            )))
        }
    };
    Ok(BulkOperation {
        id: Some(row.id),
        key: Some(row.idempotency_key),
        action,
        matched: count(row.matched.max(counts.matched)),
        providers,
        changed: count(counts.changed),
        skipped,
        done: counts.undecided == 0,
        dry_run: false,
    })
}

/// `idempotency_conflict`: the key already started operation `id` with another request.
fn bulk_conflict(key: &str, id: &str) -> Error {
    Error::IdempotencyConflict {
        message: format!(
            "the bulk key {key:?} already started operation {id} with another action or \
             filter; use a new key for a new operation"
        ),
        // The operation's id stands where a job's would: what the key is taken by.
        details: ConflictDetails {
            existing_job_id: id.to_owned(),
        },
    }
}

/// A count from the ledger as the faces show it.
fn count(n: i64) -> u32 {
    u32::try_from(n.max(0)).unwrap_or(u32::MAX)
}

/// A JSON value with every `null` member left out, as an intent's fingerprint leaves them.
fn without_nulls(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, without_nulls(v)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests;
