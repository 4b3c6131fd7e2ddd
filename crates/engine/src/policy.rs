//! The route policy of SPEC §7: where a job's next automatic attempt goes, or why there is none.

use crate::attempt::AttemptState;
use crate::failure::{FailureKind, RetryHere};
use crate::intent::Intent;
use crate::model::{Attempt, JobError};

/// Tries at one provider before the route moves on.
pub const TRIES_PER_PROVIDER: usize = 2;

/// What the executor does next for a queued job.
#[derive(Debug, Clone, PartialEq)]
pub enum Next {
    /// Create the next attempt at this provider.
    Attempt(String),
    /// No further automatic attempt: fail the job with this error.
    Fail(JobError),
}

/// Decides the next automatic step from the job's intent and its attempts so far (oldest
/// first). `validated(provider)` says whether automatic failover to that provider is allowed.
///
/// The last attempt's failure kind decides whether the same provider may be tried again
/// (SPEC §6, through `crate::FailureKind::rule`). Whether the route may move on is decided by
/// the whole history (SPEC §7): once any attempt ended in an outcome that does not permit
/// failover (an `http` 5xx, a timeout, an attempt a person abandoned after it was sent), the
/// work may have happened where it ran, and the job never leaves that provider by itself
/// until the budget is spent, whatever a later attempt there answered.
pub fn next_step(intent: &Intent, attempts: &[Attempt], validated: impl Fn(&str) -> bool) -> Next {
    // The attempt a money budget kept from being sent last is sent now, where it was to go,
    // whoever chose that provider (the route, or a person's retry elsewhere).
    let resumed = attempts
        .last()
        .filter(|a| kept_back_by_a_budget(a))
        .map(|a| a.provider.clone());
    // An attempt a money budget kept from being sent never ran: it counts for nothing here.
    let ran: Vec<Attempt>;
    let attempts = if attempts.iter().any(kept_back_by_a_budget) {
        ran = attempts
            .iter()
            .filter(|a| !kept_back_by_a_budget(a))
            .cloned()
            .collect();
        &ran[..]
    } else {
        attempts
    };
    let budget = intent.max_attempts() as usize;
    if attempts.len() >= budget {
        return Next::Fail(JobError {
            code: "attempts_exhausted".to_owned(),
            message: format!("all {budget} attempts were used"),
        });
    }
    if let Some(provider) = resumed {
        return Next::Attempt(provider);
    }
    let (Some(last), Some(primary)) = (attempts.last(), intent.route.first()) else {
        return match intent.route.first() {
            Some(primary) => Next::Attempt(primary.clone()),
            None => Next::Fail(JobError {
                code: "no_route".to_owned(),
                message: "the route names no provider".to_owned(),
            }),
        };
    };
    let here = last.provider.as_str();
    let kind = last.error.as_ref().map(|e| e.failure());
    // An attempt closed without an error (abandoned by a person) may have happened: retry
    // where it ran.
    let retry = kind.map_or(RetryHere::Yes, |k| k.retry_here());
    let failover = !attempts.iter().any(forbids_failover);
    let not_here = retry == RetryHere::NotHere;
    let tries_here = attempts
        .iter()
        .rev()
        .take_while(|a| a.provider == here)
        .count();
    if !not_here && tries_here < TRIES_PER_PROVIDER {
        return Next::Attempt(here.to_owned());
    }
    let what = kind.map_or("abandoned", |k| k.as_str());
    // A provider outside the route (a person's explicit choice) hands back to the primary.
    let next = match intent.route.iter().position(|p| p == here) {
        Some(i) => intent.route.get(i + 1),
        None => Some(primary),
    };
    match next {
        Some(next) if failover && validated(next) => Next::Attempt(next.clone()),
        Some(next) if failover => Next::Fail(JobError {
            code: "fallback_not_validated".to_owned(),
            message: format!(
                "{here} cannot take it ({what}); {next} has not passed the contract check for this job's contract, so onejob will not fail over to it by itself"
            ),
        }),
        // The outcome does not prove the effect did not happen: never another provider.
        Some(_) | None if !not_here => Next::Attempt(here.to_owned()),
        Some(next) => Next::Fail(JobError {
            code: what.to_owned(),
            message: format!(
                "{here} refused it ({what}) and onejob may not fail over to {next} after it"
            ),
        }),
        None => Next::Fail(JobError {
            code: what.to_owned(),
            message: format!(
                "{here} refused it ({}) and no provider follows it in the route",
                last.error.as_ref().map(|e| e.message.as_str()).unwrap_or("")
            ),
        }),
    }
}

/// Whether an attempt's outcome leaves open that the work happened at its provider: an
/// outcome that does not permit failover, or an attempt given up on after it may have been
/// sent. An attempt never sent (abandoned while `pending`) proves nothing either way.
fn forbids_failover(attempt: &Attempt) -> bool {
    let sent = attempt.sent_at.is_some();
    match (attempt.state, attempt.error.as_ref()) {
        (AttemptState::Abandoned, _) => sent,
        (_, Some(error)) => !error.failure().permits_failover(),
        (AttemptState::Failed, None) => sent,
        // Open, or settled with an answer: the job is not queued, and a person's retry
        // after an answer is theirs to make.
        _ => false,
    }
}

/// Whether a budget of money kept the attempt from being sent (SPEC §17).
fn kept_back_by_a_budget(attempt: &Attempt) -> bool {
    attempt
        .error
        .as_ref()
        .is_some_and(|e| e.kind == FailureKind::BudgetReached.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::AttemptError;
    use crate::AttemptState;

    fn intent(route: &[&str], max: u32) -> Intent {
        Intent {
            route: route.iter().map(|s| s.to_string()).collect(),
            input: serde_json::json!(1),
            contract: None,
            params: None,
            max_attempts: Some(max),
        }
    }

    fn failed(provider: &str, kind: &str) -> Attempt {
        Attempt {
            id: "a".into(),
            job_id: "j".into(),
            number: 1,
            provider: provider.into(),
            state: AttemptState::Failed,
            job_version: 0,
            request_id: None,
            http_status: None,
            error: Some(AttemptError {
                kind: kind.into(),
                message: String::new(),
            }),
            executor_id: None,
            lease_expires_at: None,
            flagged_for_review: false,
            created_at: String::new(),
            sent_at: None,
            finished_at: None,
            usage: None,
            cost: None,
        }
    }

    fn provider(next: Next) -> String {
        match next {
            Next::Attempt(p) => p,
            Next::Fail(e) => format!("fail:{}", e.code),
        }
    }

    /// The ledger starts a job with no attempt at its primary in one statement
    /// (`attempts/insert_first`), without asking this function: that must stay its first step,
    /// whatever is validated and whatever the budget.
    #[test]
    fn a_job_without_attempts_starts_at_its_primary() {
        for max in [1, 5] {
            let route = intent(&["a", "b"], max);
            for validated in [false, true] {
                assert_eq!(provider(next_step(&route, &[], |_| validated)), "a");
            }
        }
    }

    /// An attempt a budget kept from being sent uses neither an attempt of the job nor a try
    /// at its provider: after any number of them, a job of one attempt still has it.
    #[test]
    fn an_attempt_a_budget_kept_back_counts_for_nothing() {
        let route = intent(&["a", "b"], 1);
        let kept = [
            failed("a", "budget_reached"),
            failed("a", "budget_reached"),
            failed("a", "budget_reached"),
        ];
        assert_eq!(provider(next_step(&route, &kept, |_| false)), "a");
        let then_one = [failed("a", "budget_reached"), failed("a", "never_sent")];
        assert_eq!(
            provider(next_step(&route, &then_one, |_| true)),
            "fail:attempts_exhausted"
        );
    }

    /// A person abandoned an attempt sent to `a` and retried the job at `b`, and a budget kept
    /// that attempt back: once the period ends it goes to `b`, where the person sent it, never
    /// back to `a` by itself, where the work may have happened already.
    #[test]
    fn a_kept_back_attempt_is_sent_where_it_was_to_go_not_where_a_person_left() {
        let route = intent(&["a"], 5);
        let mut left = failed("a", "");
        (left.state, left.error, left.sent_at) = (AttemptState::Abandoned, None, Some("t".into()));
        let kept = [left.clone(), failed("b", "budget_reached")];
        assert_eq!(provider(next_step(&route, &kept, |_| true)), "b");
        // Without the budget, the route's own choice after that abandoned attempt stands.
        assert_eq!(provider(next_step(&route, &[left], |_| true)), "a");
    }

    #[test]
    fn two_tries_at_a_provider_then_the_next_only_if_validated() {
        let route = intent(&["a", "b"], 5);
        let one = [failed("a", "never_sent")];
        let two = [failed("a", "never_sent"), failed("a", "never_sent")];
        assert_eq!(provider(next_step(&route, &[], |_| false)), "a");
        assert_eq!(provider(next_step(&route, &one, |_| false)), "a");
        assert_eq!(
            provider(next_step(&route, &two, |_| false)),
            "fail:fallback_not_validated"
        );
        assert_eq!(provider(next_step(&route, &two, |p| p == "b")), "b");
    }

    #[test]
    fn an_http_server_error_stays_at_its_provider_even_with_a_validated_fallback() {
        let route = intent(&["a", "b"], 5);
        let two = [
            failed("a", "server_error_keyed"),
            failed("a", "server_error_keyed"),
        ];
        assert_eq!(provider(next_step(&route, &two, |_| true)), "a");
    }

    #[test]
    fn a_refusal_moves_on_at_once_and_ends_at_the_last_provider() {
        let route = intent(&["a", "b"], 5);
        let refused = [failed("a", "rejected")];
        assert_eq!(provider(next_step(&route, &refused, |_| true)), "b");
        let at_last = [failed("a", "rejected"), failed("b", "rejected")];
        assert_eq!(
            provider(next_step(&route, &at_last, |_| true)),
            "fail:rejected"
        );
    }

    #[test]
    fn the_last_provider_is_retried_until_the_budget_is_spent() {
        let route = intent(&["a"], 3);
        let mut attempts = vec![failed("a", "throttled"), failed("a", "throttled")];
        assert_eq!(provider(next_step(&route, &attempts, |_| false)), "a");
        attempts.push(failed("a", "throttled"));
        assert_eq!(
            provider(next_step(&route, &attempts, |_| false)),
            "fail:attempts_exhausted"
        );
    }
}
