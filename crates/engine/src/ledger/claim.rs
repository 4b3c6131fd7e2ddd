//! The executor's view of the ledger: what can be sent now, and claiming a queued job's next
//! attempt by the route policy, decided inside the claiming transaction.

use std::time::Duration;

use crate::error::{Error, Result};
use crate::events::EventKind;
use crate::intent::{validate_intent, Intent};
use crate::job::JobStatus;
use crate::model::{Actor, Attempt, Job, JobAttempt, JobError};
use crate::policy::{next_step, Next};
use crate::store::{attempts as attempt_rows, contracts as contract_rows, jobs as job_rows, Tx};
use crate::Engine;

use super::attempts::{start_attempt, Starter};
use super::contracts::validated_in;
use super::group::{GroupWrite, Lock, Step};
use super::job_row;
use super::transition::fail_job;

/// The outcome of trying to claim a queued job.
#[derive(Debug, Clone, PartialEq)]
pub enum Claim {
    /// A new `pending` attempt, to be sent by the claimer.
    Attempt(Box<JobAttempt>),
    /// The route policy allows no further attempt, or the job cannot be sent (its provider
    /// was removed); the job is now `failed` with the reason.
    Failed(Box<Job>),
    /// Not claimable now: someone else got there first (an open attempt, a cancel, another
    /// executor), or its backoff has not ended.
    Skipped,
}

fn misconfigured(message: String) -> JobError {
    JobError {
        code: "misconfigured".to_owned(),
        message,
    }
}

/// Why a job cannot be sent as configured now: its contract was removed since it was
/// submitted. (A provider removed since is found when its attempt cannot be inserted.) The job
/// fails with it; no other job stops.
async fn unsendable(
    conn: &mut impl crate::store::Handle,
    intent: &Intent,
) -> Result<Option<JobError>> {
    if let Some(contract) = &intent.contract {
        if contract_rows::get(conn, contract).await?.is_none() {
            return Ok(Some(misconfigured(format!(
                "contract {contract} is no longer configured; add it again, then retry the job"
            ))));
        }
    }
    Ok(None)
}

/// The policy's first step in one call: a queued job with no attempt yet starts at its route's
/// primary ([`next_step`] with no attempts), unless its backoff, its primary or its contract
/// says otherwise. `None`, with nothing written, in every such case: the caller reads the job
/// and decides by the policy.
async fn first_attempt(tx: &mut Tx, job_id: &str) -> Result<Option<JobAttempt>> {
    let id = uuid::Uuid::now_v7().to_string();
    let inserted = attempt_rows::insert_first(tx, &id, job_id, created()).await?;
    first_claimed(job_id, inserted)
}

/// A first attempt's `attempt_created` event: its kind and who created it.
fn created() -> (&'static str, &'static str) {
    (EventKind::AttemptCreated.as_str(), Actor::Executor.as_str())
}

/// A first attempt as inserted, beside its job as moved: the claim; `None` when none was.
fn first_claimed(job_id: &str, inserted: attempt_rows::Inserted) -> Result<Option<JobAttempt>> {
    let Some(attempt) = inserted.attempt else {
        return Ok(None);
    };
    let Some(job) = inserted.job else {
        return Err(Error::internal(format!(
            "job {job_id}: its first attempt was inserted, yet the job was not moved to running"
        )));
    };
    Ok(Some(JobAttempt {
        job: job.into_job()?,
        attempt: attempt.into_attempt()?,
        next_attempt: None,
    }))
}

/// Claims a queued job's next attempt inside the caller's transaction (see
/// [`Engine::claim_next`]).
pub(super) async fn claim_in(tx: &mut Tx, job_id: &str) -> Result<Claim> {
    // The job's lock first, unless another host holds it: then it is that host's to write.
    if !job_rows::lock_skipping(tx, job_id).await? {
        return match job_rows::by_id(tx, job_id).await? {
            Some(_) => Ok(Claim::Skipped),
            None => Err(Error::not_found("job", job_id)),
        };
    }
    claim_locked(tx, job_id, true).await
}

/// [`claim_in`] for a job whose lock the caller's transaction already holds; `try_first`
/// false when the policy's first step was already tried for it (and wrote nothing).
async fn claim_locked(tx: &mut Tx, job_id: &str, try_first: bool) -> Result<Claim> {
    if try_first {
        if let Some(claimed) = first_attempt(tx, job_id).await? {
            return Ok(Claim::Attempt(Box::new(claimed)));
        }
    }
    let (job, attempts) = job_rows::with_attempts(tx, job_id)
        .await?
        .ok_or_else(|| Error::not_found("job", job_id))?;
    let job = job.into_job()?;
    // The database's clock decides whether the backoff has ended.
    let waiting = job.not_before.is_some() && job_rows::backing_off(tx, job_id).await?;
    if job.status != JobStatus::Queued || waiting {
        return Ok(Claim::Skipped);
    }
    let intent = validate_intent(job.intent.clone())?.intent;
    let attempts = attempts
        .into_iter()
        .map(|a| a.into_attempt())
        .collect::<Result<Vec<Attempt>>>()?;
    // Only a provider whose current contract check passed takes over by itself; a job
    // without a contract has none.
    let validated = validated_in(tx, &intent).await?;
    let error = match next_step(&intent, &attempts, |p| validated.contains(p)) {
        Next::Attempt(provider) => match unsendable(tx, &intent).await? {
            Some(error) => error,
            None => {
                let starter = Starter {
                    actor: Actor::Executor,
                    explicit: false,
                    field: "provider",
                };
                match start_attempt(tx, &job, &provider, starter).await {
                    Ok(started) => {
                        let claimed = started.into_job_attempt(tx).await?;
                        return Ok(Claim::Attempt(Box::new(claimed)));
                    }
                    Err(Error::AttemptBlocked { .. }) => return Ok(Claim::Skipped),
                    // Its one refusal of the input: the provider is not configured.
                    Err(Error::InvalidInput { .. }) => misconfigured(format!(
                        "provider {provider} is no longer configured; add it again, or retry the job on another provider"
                    )),
                    Err(e) => return Err(e),
                }
            }
        },
        Next::Fail(error) => error,
    };
    fail_job(tx, job_id, &error, Actor::Executor).await?;
    let job = job_row(tx, job_id).await?.into_job()?;
    Ok(Claim::Failed(Box::new(job)))
}

impl Engine {
    /// For the executor: claims a `queued` job's next attempt where the route policy sends it,
    /// or fails the job when the policy allows none. Everything the policy reads — the job's
    /// status and backoff, its attempts, the validated fallbacks of its contract, the
    /// providers — is read inside the claiming transaction.
    pub(crate) async fn claim_next(&self, job_id: &str) -> Result<Claim> {
        let job_id = job_id.to_owned();
        self.group(ClaimNext { job_id }).await
    }

    /// For the executor: [`Engine::claim_next`] for several jobs, committed together (one
    /// transaction, each claim under its own savepoint). The outcomes are in the order of
    /// `job_ids`; a claim that fails fails alone. (Over 256 claims take more than one group.)
    pub(crate) async fn claim_many(&self, job_ids: &[String]) -> Result<Vec<Result<Claim>>> {
        let mut pending = Vec::with_capacity(job_ids.len());
        for job_id in job_ids {
            let job_id = job_id.clone();
            pending.push(self.writes.queue(ClaimNext { job_id })?);
        }
        let mut outcomes = Vec::with_capacity(pending.len());
        for claim in pending {
            outcomes.push(self.writes.outcome(claim).await);
        }
        Ok(outcomes)
    }

    /// For the executor: claims up to `limit` sendable jobs, oldest first, in one write that
    /// reads them locked (passing over jobs another host is claiming) and claims each; their
    /// ids beside the outcomes. A claim that fails fails the write, which is then run alone.
    pub(crate) async fn claim_sendable(&self, limit: u32) -> Result<Vec<(String, Claim)>> {
        self.group(ClaimSendable { limit }).await
    }

    /// For the executor: ids of queued jobs whose backoff has passed, oldest first.
    pub(crate) async fn sendable_jobs(&self, limit: u32) -> Result<Vec<String>> {
        let mut conn = self.read().await?;
        Ok(job_rows::sendable(&mut conn, limit).await?)
    }

    /// For the executor: when the earliest backoff of a queued job ends, if one waits.
    pub(crate) async fn next_backoff_end(&self) -> Result<Option<String>> {
        let mut conn = self.read().await?;
        Ok(job_rows::next_not_before(&mut conn).await?)
    }

    /// For the executor: attempts committed `pending` and never sent whose job is running,
    /// oldest first.
    pub(crate) async fn pending_attempts(&self, limit: u32) -> Result<Vec<Attempt>> {
        let mut conn = self.read().await?;
        attempt_rows::pending(&mut conn, limit)
            .await?
            .into_iter()
            .map(|a| a.into_attempt())
            .collect()
    }

    /// For the executor's pass: [`Engine::pending_attempts`] less those another host has just
    /// claimed and is about to send (PostgreSQL).
    pub(crate) async fn left_pending_attempts(&self, limit: u32) -> Result<Vec<Attempt>> {
        let mut conn = self.read().await?;
        attempt_rows::pending_left(&mut conn, limit)
            .await?
            .into_iter()
            .map(|a| a.into_attempt())
            .collect()
    }

    /// How long `attempt_id`'s request may still be answered: the time left until its
    /// provider's hard deadline has passed since it was sent, by the ledger's clock; zero once
    /// it has. A status lookup before then could hear "not found" for work still being done.
    pub(crate) async fn lookup_wait(&self, attempt_id: &str) -> Result<Duration> {
        let mut conn = self.read().await?;
        attempt_rows::lookup_wait(&mut conn, attempt_id)
            .await?
            .ok_or_else(|| Error::not_found("attempt", attempt_id))
    }

    /// For status lookups: attempts in `unknown` whose request can no longer be answered (the
    /// hard deadline passed since they were sent, by the ledger's clock), oldest first.
    pub(crate) async fn unknown_attempts(&self, limit: u32) -> Result<Vec<Attempt>> {
        let mut conn = self.read().await?;
        attempt_rows::unknown(&mut conn, limit)
            .await?
            .into_iter()
            .map(|a| a.into_attempt())
            .collect()
    }

    /// For the executor: a job by id, whoever owns it.
    pub(crate) async fn job_by_id(&self, job_id: &str) -> Result<Job> {
        let mut conn = self.read().await?;
        job_row(&mut conn, job_id).await?.into_job()
    }

    /// For the executor: an attempt by id, whoever owns its job.
    pub(crate) async fn attempt_by_id(&self, attempt_id: &str) -> Result<Attempt> {
        let mut conn = self.read().await?;
        super::attempt_row(&mut conn, attempt_id)
            .await?
            .into_attempt()
    }
}

/// [`Engine::claim_next`]'s write: the job's next attempt by the route policy, or the job
/// failed when the policy allows none.
pub(super) struct ClaimNext {
    pub(super) job_id: String,
}

impl GroupWrite for ClaimNext {
    type Out = Claim;

    fn lock(&self) -> Lock {
        Lock::Nothing
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, Claim> {
        Box::pin(claim_in(tx, &self.job_id))
    }
}

/// [`Engine::claim_sendable`]'s write: up to `limit` sendable jobs, read locked and claimed.
struct ClaimSendable {
    limit: u32,
}

impl GroupWrite for ClaimSendable {
    type Out = Vec<(String, Claim)>;

    fn lock(&self) -> Lock {
        Lock::Nothing
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, Self::Out> {
        let limit = self.limit;
        Box::pin(async move {
            // Read locked: each is claimed without taking its lock again.
            let ids = job_rows::sendable_locking(tx, limit).await?;
            // Their first attempts in one statement (PostgreSQL); a job it did not
            // start (a retry, a backoff, a provider removed) is claimed alone, by the
            // policy.
            let firsts: Vec<(String, String)> = ids
                .iter()
                .map(|id| (uuid::Uuid::now_v7().to_string(), id.clone()))
                .collect();
            let mut started = match firsts.len() {
                0 | 1 => None,
                _ => attempt_rows::insert_first_many(tx, &firsts, created()).await?,
            };
            let mut claims = Vec::with_capacity(ids.len());
            for id in ids {
                let first = started.as_mut().map(|started| started.remove(&id));
                let claim = match first {
                    Some(Some(inserted)) => match first_claimed(&id, inserted)? {
                        Some(claimed) => Claim::Attempt(Box::new(claimed)),
                        None => claim_locked(tx, &id, false).await?,
                    },
                    Some(None) => claim_locked(tx, &id, false).await?,
                    None => claim_locked(tx, &id, true).await?,
                };
                claims.push((id, claim));
            }
            Ok(claims)
        })
    }
}
