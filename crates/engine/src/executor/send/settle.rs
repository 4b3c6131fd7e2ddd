//! After an attempt's exchange: the answer judged against its envelope and the job's
//! contract, and the outcome recorded by SPEC §6's table.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;

use crate::attempt::{AttemptState, Cause};
use crate::contracts::Contract;
use crate::error::{Error, Result};
use crate::failure::{FailureKind, RetryHere};
use crate::ledger::ResponseHead;
use crate::model::{AfterFailure, Attempt, AttemptError, Usage};
use crate::providers::http::Classified;
use crate::providers::{decode, judge, ProviderConfig};

use crate::executor::Executor;

use super::prepare::Target;

impl Executor {
    /// Reads an answer out of its kind's envelope and holds it to the job's contract, before
    /// it may reach the compare-and-swap: an invalid answer becomes a failure of the attempt
    /// (`invalid_answer`, `contract_violation`), never the job's result. Token usage is kept.
    pub(in crate::executor) async fn judge(
        &self,
        attempt: &Attempt,
        outcome: Classified,
        config: &ProviderConfig,
        contract: Option<&Contract>,
    ) -> Result<Classified> {
        let Classified::Answer(body) = outcome else {
            return Ok(outcome);
        };
        let decoded = match decode(config.kind, contract, body) {
            Ok(decoded) => decoded,
            Err(error) => return Ok(answered_but(error)),
        };
        if decoded.usage.is_some() || decoded.id.is_some() {
            let engine = &self.inner.engine;
            let (id, usage) = (decoded.id.as_deref(), decoded.usage.as_ref());
            // Settled at the price it was sent at: the one this executor charged it (SPEC §17).
            let cost = config.price.as_ref().and_then(|price| {
                let used = Usage::from_reported(usage?)?;
                let (input, output) = (used.prompt_tokens, used.completion_tokens);
                price.cost_nanos(u64::from(input), u64::from(output))
            });
            self.persist("usage", || {
                engine.record_usage(&attempt.id, id, usage, cost)
            })
            .await?;
        }
        Ok(match judge(decoded.output, contract) {
            Ok(result) => Classified::Answer(result),
            Err(error) => answered_but(error),
        })
    }

    /// Records what the exchange amounted to, by SPEC §6's table; storage errors are retried,
    /// so an answer that arrived is not lost because one write failed.
    pub(super) async fn settle(
        &self,
        attempt: &Attempt,
        outcome: Classified,
        target: &Target,
        head: Option<&Arc<ResponseHead>>,
    ) -> Result<()> {
        let engine = &self.inner.engine;
        match outcome {
            Classified::Answer(answer) => {
                // A head whose own write has not run yet goes with the answer's.
                let carried = head.filter(|h| h.carried_by_answer()).cloned();
                self.persist("answer", || {
                    engine.complete_carrying(
                        Some(&attempt.job_id),
                        &attempt.id,
                        &answer,
                        Cause::Answer,
                        carried.clone(),
                    )
                })
                .await?;
            }
            Classified::Failed {
                error,
                http_status,
                retry_after,
            } => {
                let kind = error.failure();
                let last = kind.on_last_try();
                if last_keyed_try(kind, attempt, target) {
                    // The last try at a provider that honours the key: nobody will send it
                    // again, so what happened must be found out, not assumed.
                    let why = last.because(format!(
                        "{}; it was the job's last attempt, so it may have been processed",
                        error.message
                    ));
                    return self.mark_unknown_if_in_flight(attempt, why).await;
                }
                let after = match kind.retry_here() {
                    RetryHere::Yes => AfterFailure::RequeueAfter {
                        wait: self.backoff(attempt.number, retry_after),
                        retry_after,
                    },
                    RetryHere::NotHere | RetryHere::Blocked => AfterFailure::Requeue,
                };
                let failed = self
                    .persist("failure", || {
                        engine.fail_attempt(&attempt.id, error.clone(), http_status, after.clone())
                    })
                    .await;
                match failed {
                    // A person resolved it meanwhile: their verdict stands.
                    Ok(_) | Err(Error::InvalidTransition { .. }) => {}
                    Err(e) => return Err(e),
                }
            }
            Classified::Unknown { error, .. } => {
                self.mark_unknown_if_in_flight(attempt, error).await?;
            }
        }
        Ok(())
    }

    /// `in_flight → unknown`; after the soft timeout it is already unknown, and a person may
    /// have moved it: that stays as it is.
    pub(super) async fn mark_unknown_if_in_flight(
        &self,
        attempt: &Attempt,
        why: AttemptError,
    ) -> Result<()> {
        let engine = &self.inner.engine;
        let current = self
            .persist("unknown", || engine.attempt_by_id(&attempt.id))
            .await?;
        if current.state != AttemptState::InFlight {
            return Ok(());
        }
        match self
            .persist("unknown", || engine.mark_unknown(&attempt.id, why.clone()))
            .await
        {
            Ok(_) | Err(Error::InvalidTransition { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Exponential backoff with jitter, never shorter than the provider's `Retry-After` (the
    /// ledger caps any wait at an hour).
    pub(in crate::executor) fn backoff(
        &self,
        number: u32,
        retry_after: Option<Duration>,
    ) -> Duration {
        let options = &self.inner.options;
        let doubled = options
            .backoff_base
            .saturating_mul(1u32 << number.saturating_sub(1).min(16));
        let capped = doubled.min(options.backoff_cap);
        let jittered = capped.mul_f64(rand::thread_rng().gen_range(0.5..=1.0));
        jittered.max(retry_after.unwrap_or_default())
    }
}

/// Whether a failure at a provider that honours the key is the job's last try: nobody will send
/// it again, so it is `unknown` rather than failed.
fn last_keyed_try(kind: FailureKind, attempt: &Attempt, target: &Target) -> bool {
    kind.on_last_try() != kind && attempt.number >= target.max_attempts
}

/// The failure kind that makes the attempt `unknown` by this outcome (SPEC §6), if it does.
pub(super) fn unknown_by(
    outcome: &Classified,
    attempt: &Attempt,
    target: &Target,
) -> Option<FailureKind> {
    match outcome {
        Classified::Unknown { error, .. } => Some(error.failure()),
        Classified::Failed { error, .. } if last_keyed_try(error.failure(), attempt, target) => {
            Some(error.failure().on_last_try())
        }
        _ => None,
    }
}

/// A complete 2xx answer that cannot be the result: a definite failure of the attempt.
fn answered_but(error: AttemptError) -> Classified {
    Classified::Failed {
        error,
        http_status: None,
        retry_after: None,
    }
}
