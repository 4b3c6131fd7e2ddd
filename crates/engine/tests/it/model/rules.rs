//! The rules checked after every step: the ledger agrees with the model, and keeps every rule
//! on its own.

use onejob_engine::money::Amount;
use onejob_engine::{Attempt, AttemptState, JobDetail, JobStatus};
use serde_json::json;

use super::priced::{nanos, slot_of, BUDGET_SLOTS};
use super::reference::{MJob, Model};
use super::world::{BulkDo, Ledger, Prov, KEYS};
use super::OWNER;
use crate::common::Sql;

impl Ledger {
    /// After every step: the ledger agrees with the model, and keeps every rule on its own.
    pub(super) async fn check(&self, m: &Model) {
        let ctx = self.ctx();
        assert_eq!(self.jobs.len(), m.jobs.len(), "{ctx}: jobs known");
        assert_eq!(
            self.attempts.len(),
            m.attempts.len(),
            "{ctx}: attempts known"
        );
        let counts =
            Sql::both("SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM attempts)");
        let (jobs, attempts): (i64, i64) = self.raw.fetch_one(counts, &[]).await.expect("count");
        assert_eq!(jobs as usize, m.jobs.len(), "{ctx}: job rows");
        assert_eq!(attempts as usize, m.attempts.len(), "{ctx}: attempt rows");
        let mut details = Vec::new();
        for (j, mj) in m.jobs.iter().enumerate() {
            let d = self
                .person()
                .job(OWNER, &self.jobs[j])
                .await
                .unwrap_or_else(|e| panic!("{ctx}: job {j}: {e:?}"));
            let ctx = format!("{ctx}: job {j} ({})", KEYS[mj.key].name);
            // Rule 10: no provider does a job's work twice. The keyed provider deduplicates by
            // the key, so it does it at most once, across first sends, retries and replays;
            // the providers without keys are held by rule 4.
            assert!(
                mj.keyed_work <= 1,
                "{ctx}: rule 10: the keyed provider did the job's work {} times",
                mj.keyed_work
            );
            self.agrees(m, mj, &d, &ctx);
            ledger_rules(&d, &ctx);
            // Rule 5: a result, once claimed, never changes.
            if let Some(winner) = &d.job.completed_by {
                let now = (winner.clone(), d.job.result.clone());
                let mut settled = self.settled.borrow_mut();
                let first = settled.entry(j).or_insert_with(|| now.clone());
                assert_eq!(*first, now, "{ctx}: rule 5: the result changed");
            } else {
                assert!(
                    !self.settled.borrow().contains_key(&j),
                    "{ctx}: rule 5: the result vanished"
                );
            }
            details.push(d);
        }
        self.bulk_rules(m, &details, &ctx).await;
        self.budget_rules(m, &ctx).await;
        effects(m, false, &ctx);
    }

    /// The ledger as the model says it must be.
    fn agrees(&self, m: &Model, mj: &MJob, d: &JobDetail, ctx: &str) {
        let job = &d.job;
        let winner = mj.completed_by.map(|a| self.attempts[a].clone());
        let want = (
            mj.status,
            mj.version,
            &winner,
            &mj.result,
            mj.flagged,
            mj.attempts.len(),
        );
        let got = (
            job.status,
            job.version,
            &job.completed_by,
            &job.result,
            job.flagged_for_review,
            d.attempts.len(),
        );
        assert_eq!(
            got, want,
            "{ctx}: (status, version, completed_by, result, flagged, attempts) differ from the model (left: the ledger, right: the model)"
        );
        for (&a, got) in mj.attempts.iter().zip(&d.attempts) {
            let ma = &m.attempts[a];
            assert_eq!(
                got.cost,
                ma.cost(),
                "{ctx}: attempt {a}: its cost (left: the ledger, right: the model)"
            );
            let want = (
                self.attempts[a].as_str(),
                ma.number,
                ma.provider.name(),
                ma.state,
                ma.job_version,
                ma.error,
                ma.flagged,
                ma.sends > 0,
            );
            let got = (
                got.id.as_str(),
                got.number,
                got.provider.as_str(),
                got.state,
                got.job_version,
                got.error.as_ref().map(|e| e.kind.as_str()),
                got.flagged_for_review,
                got.sent_at.is_some(),
            );
            assert_eq!(
                got, want,
                "{ctx}: attempt {a}: (id, number, provider, state, job_version, error, flagged, sent) differ from the model (left: the ledger, right: the model)"
            );
            let replays = d
                .events
                .iter()
                .filter(|e| {
                    e.kind == "replayed" && e.attempt_id.as_deref() == Some(&self.attempts[a])
                })
                .count();
            assert_eq!(
                replays, ma.replays,
                "{ctx}: attempt {a}: its replayed events (left) and the replays that reached its provider (right)"
            );
        }
    }

    /// Rule 12 (SPEC §17): no budget is ever passed. What each budget holds in its period (its
    /// attempts in flight or `unknown` at their worst case, and what the ended ones spent) is
    /// what the model says, and never more than its limit. Only a budget set below what it
    /// already held may be over it, and then it holds no more after a step than before: every
    /// send under it is kept back until it is below.
    async fn budget_rules(&self, m: &Model, ctx: &str) {
        let listed = self
            .person()
            .budgets(None)
            .await
            .unwrap_or_else(|e| panic!("{ctx}: budgets: {e:?}"));
        let got: Vec<[Option<String>; 6]> = listed
            .iter()
            .map(|b| {
                let period = serde_json::to_value(b.period).expect("a period");
                [
                    Some(b.name.clone()),
                    b.owner.clone(),
                    b.provider.clone(),
                    Some(b.currency.clone()),
                    Some(b.limit.clone()),
                    period.as_str().map(str::to_owned),
                ]
            })
            .collect();
        let want: Vec<[Option<String>; 6]> = (0..BUDGET_SLOTS)
            .filter_map(|slot| m.budgets[slot].map(|b| b.listed(slot)))
            .collect();
        assert_eq!(
            got, want,
            "{ctx}: rule 12: the budgets (left: the ledger, right: the model)"
        );
        let mut held = self.held.borrow_mut();
        for budget in &listed {
            let slot = slot_of(&budget.name);
            let (used, limit) = (nanos(&budget.used), nanos(&budget.limit));
            let before = held[slot];
            assert!(
                used <= limit || before.is_some_and(|before| used <= before),
                "{ctx}: rule 12: budget {} holds {} of its limit {} (before the step: {})",
                budget.name,
                budget.used,
                budget.limit,
                before.map_or("not set".to_owned(), |n| Amount::from_nanos(n).to_string())
            );
            assert_eq!(
                used,
                m.budget_used(slot),
                "{ctx}: rule 12: what budget {} holds in its period (left: the ledger, right: the model), limit {}",
                budget.name,
                budget.limit
            );
            held[slot] = Some(used);
        }
    }

    /// Rule 11: a bulk operation's set is the jobs the model says matched when it started,
    /// each decided once: its item's outcome is the model's, and the events naming the
    /// operation change a job at most once, exactly when the item says it changed.
    async fn bulk_rules(&self, m: &Model, details: &[JobDetail], ctx: &str) {
        for (slot, b) in m.bulks.iter().enumerate() {
            let (Some(b), Some(id)) = (b, &self.bulk_ids[slot]) else {
                assert!(
                    b.is_none() || self.bulk_ids[slot].is_none(),
                    "{ctx}: bulk slot {slot}: started in the model and not in the ledger, or the reverse"
                );
                continue;
            };
            let items = Sql {
                sqlite: "SELECT group_concat(job_id || '=' || coalesce(outcome, '-'), ',')
                         FROM (SELECT job_id, outcome FROM bulk_items
                               WHERE operation_id = $1 ORDER BY job_id)",
                postgres: "SELECT string_agg(job_id::text || '=' || coalesce(outcome, '-'), ','
                                             ORDER BY job_id)
                           FROM bulk_items WHERE operation_id = CAST($1 AS uuid)",
            };
            let (listed,): (Option<String>,) =
                self.raw.fetch_one(items, &[id]).await.expect("bulk items");
            let mut got: Vec<(usize, Option<String>)> = listed
                .unwrap_or_default()
                .split(',')
                .filter(|item| !item.is_empty())
                .map(|item| {
                    let (job, outcome) = item.split_once('=').expect("job=outcome");
                    let outcome = (outcome != "-").then(|| outcome.to_owned());
                    (self.job_index(job), outcome)
                })
                .collect();
            got.sort();
            assert_eq!(
                got, b.items,
                "{ctx}: rule 11: bulk slot {slot}: its jobs and their outcomes (left: the ledger, right: the model)"
            );
            let change = match b.ask.action {
                BulkDo::Resolve(_) => "resolved_by_person",
                BulkDo::Cancel => "job_cancelled",
                BulkDo::Retry(_) => "attempt_created",
            };
            for (j, d) in details.iter().enumerate() {
                let changes = d
                    .events
                    .iter()
                    .filter(|e| e.kind == change && e.detail["bulk"].as_str() == Some(id))
                    .count();
                assert!(
                    changes <= 1,
                    "{ctx}: rule 11: bulk slot {slot} changed job {j} {changes} times"
                );
                let changed = b
                    .items
                    .iter()
                    .any(|(i, o)| *i == j && o.as_deref() == Some("changed"));
                assert_eq!(
                    changes == 1,
                    changed,
                    "{ctx}: rule 11: bulk slot {slot}, job {j}: an event naming it (left) and its item changed (right)"
                );
            }
        }
    }
}

/// SPEC §4's transitions, pair by pair.
const ALLOWED: [(AttemptState, AttemptState); 14] = {
    use AttemptState::*;
    [
        (Pending, InFlight),
        (Pending, Failed),
        (Pending, Abandoned),
        (InFlight, Succeeded),
        (InFlight, Lost),
        (InFlight, Failed),
        (InFlight, Unknown),
        (InFlight, Abandoned),
        (Unknown, Succeeded),
        (Unknown, Lost),
        (Unknown, Failed),
        (Unknown, Abandoned),
        (Abandoned, Succeeded),
        (Abandoned, Lost),
    ]
};

/// The rules a ledger keeps whatever happened, read from one job's rows and history.
fn ledger_rules(d: &JobDetail, ctx: &str) {
    use AttemptState::*;
    let job = &d.job;
    // Rule 1, rule 7, and the job's status agreeing with its attempts.
    let open: Vec<&Attempt> = d.attempts.iter().filter(|a| a.state.is_open()).collect();
    assert!(
        open.len() <= 1,
        "{ctx}: rule 1: {} open attempts",
        open.len()
    );
    let open = open.first().map(|a| a.state);
    let agrees = match job.status {
        JobStatus::Running => matches!(open, Some(Pending | InFlight)),
        JobStatus::Unknown => open == Some(Unknown),
        JobStatus::Queued | JobStatus::Succeeded | JobStatus::Failed | JobStatus::Cancelled => {
            open.is_none()
        }
    };
    assert!(
        agrees,
        "{ctx}: rule 7: the job is {} with open attempt {open:?}",
        job.status
    );
    assert_eq!(
        job.completed_by.is_some(),
        job.status == JobStatus::Succeeded,
        "{ctx}: completed_by and status"
    );
    // Rules 2 and 6: each attempt's history replays to its state, one send at most.
    for a in &d.attempts {
        let mut state: Option<AttemptState> = None;
        let mut sent = 0;
        for e in d
            .events
            .iter()
            .filter(|e| e.attempt_id.as_deref() == Some(&a.id))
        {
            let next = match e.kind.as_str() {
                "attempt_created" => Some(Pending),
                "attempt_sent" => {
                    sent += 1;
                    Some(InFlight)
                }
                "attempt_unknown" | "recovered_unknown" => Some(Unknown),
                "attempt_failed" => Some(Failed),
                "attempt_abandoned" => Some(Abandoned),
                "attempt_succeeded" => Some(Succeeded),
                "race_lost" => Some(Lost),
                "resolved_by_person" => match e.detail["as"].as_str() {
                    Some("succeeded") => Some(Succeeded),
                    Some("failed") => Some(Failed),
                    Some("abandoned") => Some(Abandoned),
                    other => panic!("{ctx}: resolved_by_person as {other:?}"),
                },
                // A late answer is dropped: an attempt still waiting on it is lost, one whose
                // outcome is recorded keeps it, and so does an abandoned one whose work only a
                // status lookup found (it moves only by the provider's own answer).
                "late_answer_flagged" => match state {
                    Some(Abandoned) if e.detail["via"] == "reconciliation" => None,
                    Some(Pending | InFlight | Unknown | Abandoned) => Some(Lost),
                    _ => None,
                },
                // A replay that settles it writes its outcome's event beside this one; a budget
                // that keeps it back, `attempt_failed`.
                "backoff_set" | "replayed" | "looked_up" | "budget_reached" => None,
                other => panic!("{ctx}: attempt {}: unexpected event {other}", a.id),
            };
            if let Some(next) = next {
                if let Some(from) = state {
                    assert!(
                        ALLOWED.contains(&(from, next)),
                        "{ctx}: attempt {}: the history moves {from} -> {next}",
                        a.id
                    );
                } else {
                    assert_eq!(next, Pending, "{ctx}: attempt {}: created first", a.id);
                }
                state = Some(next);
            }
        }
        assert!(
            sent <= 1,
            "{ctx}: rule 2: attempt {} sent {sent} times",
            a.id
        );
        assert_eq!(
            sent == 1,
            a.sent_at.is_some(),
            "{ctx}: attempt {}: sent_at and its event",
            a.id
        );
        assert_eq!(
            state,
            Some(a.state),
            "{ctx}: rule 6: attempt {} is {} but its history says {state:?}",
            a.id,
            a.state
        );
    }
    // Rule 9 (SPEC §7): once an attempt may have done the work at its provider, the job never
    // reaches another provider by itself; only a person's explicit attempt may move it. An
    // attempt a budget kept back reached no provider (SPEC §17): the one after it, unless a
    // person chose it, resumes it, at its provider, by the same choice (the route's, or a
    // person's).
    let mut pinned: Option<&str> = None;
    let mut previous: Option<&str> = None;
    let mut resumes: Option<(&str, bool)> = None;
    for a in &d.attempts {
        let chosen = d.events.iter().any(|e| {
            e.kind == "attempt_created"
                && e.attempt_id.as_deref() == Some(a.id.as_str())
                && e.detail["explicit"] == json!(true)
        });
        let explicit = chosen || resumes.is_some_and(|(_, chosen)| chosen);
        if let (Some((at, _)), false) = (resumes, chosen) {
            assert_eq!(
                a.provider.as_str(),
                at,
                "{ctx}: rule 9: attempt {} went to {} instead of resuming the one kept back at {at}",
                a.number,
                a.provider
            );
        } else if let (Some(at), false) = (pinned, explicit) {
            assert_eq!(
                Some(a.provider.as_str()),
                previous,
                "{ctx}: rule 9: attempt {} went to {} by itself after an outcome at {at} that forbids failover",
                a.number,
                a.provider
            );
        }
        let forbids = match (a.state, &a.error) {
            (Abandoned, _) => a.sent_at.is_some(),
            (_, Some(error)) => !error.failure().permits_failover(),
            _ => false,
        };
        if forbids {
            pinned = Some(a.provider.as_str());
        }
        let kept_back = a.error.as_ref().is_some_and(|e| e.kind == "budget_reached");
        if kept_back {
            resumes = Some((a.provider.as_str(), explicit));
        } else {
            resumes = None;
            previous = Some(a.provider.as_str());
        }
    }
    // Rule 6 for the job, and its version counting the writes that decided its outcome.
    let count = |kind: &str| d.events.iter().filter(|e| e.kind == kind).count();
    let last_decision = d
        .events
        .iter()
        .rev()
        .find(|e| {
            matches!(
                e.kind.as_str(),
                "job_failed" | "job_retried" | "job_cancelled"
            )
        })
        .map(|e| e.kind.as_str());
    match job.status {
        JobStatus::Cancelled => assert_eq!(last_decision, Some("job_cancelled"), "{ctx}: rule 6"),
        JobStatus::Failed => assert_eq!(last_decision, Some("job_failed"), "{ctx}: rule 6"),
        JobStatus::Succeeded => {
            let winner = job.completed_by.as_deref();
            let recorded = d.events.iter().any(|e| {
                e.attempt_id.as_deref() == winner
                    && (e.kind == "attempt_succeeded"
                        || (e.kind == "resolved_by_person" && e.detail["as"] == "succeeded"))
            });
            assert!(recorded, "{ctx}: rule 6: no event for the winning attempt");
        }
        _ => {}
    }
    let decided = count("job_failed")
        + count("job_cancelled")
        + count("job_retried")
        + usize::from(job.completed_by.is_some());
    assert_eq!(
        job.version as usize, decided,
        "{ctx}: the version counts the writes that decided the outcome"
    );
    assert_eq!(count("submitted"), 1, "{ctx}: one submitted event");
}

/// Rule 4: a provider that does not honour the key is sent each job once, plus once per
/// person's decision on it — counting only sends that may have had an effect there.
/// `undecided_counts`: a send whose effect is still unknown counts (at the end of a case).
pub(super) fn effects(m: &Model, undecided_counts: bool, ctx: &str) {
    for (j, job) in m.jobs.iter().enumerate() {
        for p in Prov::ALL.into_iter().filter(|p| !p.honours_key()) {
            let sends = job
                .attempts
                .iter()
                .filter(|&&a| m.attempts[a].provider == p && m.attempts[a].effect(undecided_counts))
                .count();
            assert!(
                sends <= 1 + job.decisions,
                "{ctx}: rule 4: job {j} reached {} {sends} times with effect, after {} decisions by a person",
                p.name(),
                job.decisions
            );
        }
    }
}
