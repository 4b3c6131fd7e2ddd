//! Budgets in the model (SPEC §17): the providers' prices, the budgets a schedule sets, what
//! each one holds, which send the ledger must keep back, and how the world sets them and ends
//! their period.
//!
//! Three providers have a price, all in USD: `plain` a cent a request, `spare` half a cent,
//! `ai` a fifth of a cent a request and five cents a thousand input tokens, each byte of the
//! body it is sent with counted as a token; `keyed` has none. No answer reports usage, so an attempt that spent anything spent its
//! worst case, and the model knows every worst case exactly. The budgets' period is the
//! model's own: it ends only by `PeriodEnds`, which moves the priced attempts' `sent_at` back
//! past the start of any day or month, and ends the waits of the jobs a budget kept back.

use onejob_engine::money::Amount;
use onejob_engine::{AttemptState, Cost, JobStatus};
use proptest::prelude::*;
use serde_json::json;

use super::reference::{Expect, MAttempt, Model, Step};
use super::schedule::{Act, Op};
use super::world::{Ledger, Prov, KEYS};
use super::{OWNER, PAST, STRANGER};
use crate::common::Sql;

/// Budgets are set under `budget-<slot>`: their names sort as their slots, which is the order
/// the ledger takes them in.
pub(super) const BUDGET_SLOTS: usize = 3;

/// A cent, in billionths.
const CENT: i64 = 10_000_000;

/// The limits a schedule sets: a few requests' worth, each at least any one request's worst
/// case, so that a new period always lets a job be sent (the drain needs it).
const LIMITS: [i64; 4] = [CENT, CENT * 3 / 2, 2 * CENT, 3 * CENT];

/// Whether a failure of this kind costs nothing (SPEC §17): the request never left, the
/// provider refused it before any effect, or a lookup or a person found it did not happen.
fn free(kind: &str) -> bool {
    let never_left = ["never_sent", "misconfigured", "budget_reached", "cancelled"];
    let refused = [
        "rejected",
        "throttled",
        "server_error",
        "server_error_keyed",
    ];
    let did_not_happen = ["reconciled_failed", "resolved_by_person"];
    never_left.contains(&kind) || refused.contains(&kind) || did_not_happen.contains(&kind)
}

/// A provider's price, as its configuration states it.
pub(super) fn price(p: Prov) -> Option<serde_json::Value> {
    match p {
        Prov::Plain => Some(json!({"currency": "USD", "per_request": "0.01"})),
        Prov::Ai => Some(json!({
            "currency": "USD", "per_request": "0.002", "per_1k_input_tokens": "0.05"
        })),
        Prov::Spare => Some(json!({"currency": "USD", "per_request": "0.005"})),
        Prov::Keyed => None,
    }
}

/// The body an executor sends for a job of `KEYS[key]`; its length is its worst case's input.
pub(super) fn body(key: usize) -> String {
    let ask = format!("Reply to {}. ", KEYS[key].name).repeat(1 + key % 3);
    json!({"model": "gpt-4o-mini", "messages": [{"role": "user", "content": ask}]}).to_string()
}

/// The worst case of a request for a job of `KEYS[key]` at `p`, in billionths; `None` at a
/// provider without a price.
fn worst(p: Prov, key: usize) -> Option<i64> {
    let bytes = i64::try_from(body(key).len()).expect("a short body");
    match p {
        Prov::Plain => Some(CENT),
        // 0.05 a thousand tokens is 50,000 billionths a token.
        Prov::Ai => Some(CENT / 5 + 50_000 * bytes),
        Prov::Spare => Some(CENT / 2),
        Prov::Keyed => None,
    }
}

/// Whose jobs a budget covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Whose {
    Every,
    /// [`OWNER`]'s, who submits every job.
    Ours,
    /// [`STRANGER`]'s, who submits none.
    Theirs,
}

/// A budget as the person sets it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) struct BudgetAsk {
    provider: Option<Prov>,
    owner: Whose,
    /// In billionths.
    limit: i64,
    /// In EUR, which no provider charges in; else in USD.
    euro: bool,
    month: bool,
}

impl std::fmt::Debug for BudgetAsk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (currency, period) = self.units();
        let provider = self.provider.map_or("every provider", Prov::name);
        let limit = Amount::from_nanos(self.limit);
        write!(
            f,
            "{limit} {currency} a {period} at {provider}, {:?} owner",
            self.owner
        )
    }
}

impl BudgetAsk {
    fn units(self) -> (&'static str, &'static str) {
        (
            if self.euro { "EUR" } else { "USD" },
            if self.month { "month" } else { "day" },
        )
    }

    fn owner(self) -> Option<&'static str> {
        match self.owner {
            Whose::Every => None,
            Whose::Ours => Some(OWNER),
            Whose::Theirs => Some(STRANGER),
        }
    }

    fn json(self) -> String {
        let (currency, period) = self.units();
        let mut budget = json!({
            "limit": Amount::from_nanos(self.limit).to_string(),
            "currency": currency,
            "period": period,
        });
        if let Some(p) = self.provider {
            budget["provider"] = json!(p.name());
        }
        if let Some(owner) = self.owner() {
            budget["owner"] = json!(owner);
        }
        budget.to_string()
    }

    /// Whether it covers a priced attempt at `p` (every job is [`OWNER`]'s, every price USD).
    fn covers(self, p: Prov) -> bool {
        !self.euro && self.owner != Whose::Theirs && self.provider.is_none_or(|b| b == p)
    }

    /// The budget as the ledger lists it: (name, owner, provider, currency, limit, period).
    pub(super) fn listed(self, slot: usize) -> [Option<String>; 6] {
        let (currency, period) = self.units();
        [
            Some(budget_name(slot)),
            self.owner().map(str::to_owned),
            self.provider.map(|p| p.name().to_owned()),
            Some(currency.to_owned()),
            Some(Amount::from_nanos(self.limit).to_string()),
            Some(period.to_owned()),
        ]
    }
}

pub(super) fn budget_name(slot: usize) -> String {
    format!("budget-{slot}")
}

pub(super) fn slot_of(name: &str) -> usize {
    name.strip_prefix("budget-")
        .and_then(|slot| slot.parse().ok())
        .filter(|&slot| slot < BUDGET_SLOTS)
        .unwrap_or_else(|| panic!("the ledger named an unknown budget {name}"))
}

impl MAttempt {
    /// What it spent and has at risk, in billionths, once sent at a provider with a price:
    /// nothing yet in flight, its worst case at risk while `unknown`, nothing for a failure
    /// that proves no effect, else its worst case spent (no answer reports usage).
    fn charged(&self) -> Option<(i64, i64)> {
        let worst = self.worst?;
        Some(match self.state {
            AttemptState::Pending | AttemptState::InFlight => (0, 0),
            AttemptState::Unknown => (0, worst),
            AttemptState::Failed if self.error.is_some_and(free) => (0, 0),
            _ => (worst, 0),
        })
    }

    /// Its cost as the ledger shows it.
    pub(super) fn cost(&self) -> Option<Cost> {
        let (spent, at_risk) = self.charged()?;
        Some(Cost {
            currency: "USD".to_owned(),
            spent: Amount::from_nanos(spent).to_string(),
            at_risk: Amount::from_nanos(at_risk).to_string(),
        })
    }

    /// What it holds in a budget that covers it in its period: in flight or `unknown`, its
    /// worst case reserved; ended, what it spent.
    fn held(&self) -> i64 {
        match (self.state, self.worst) {
            (AttemptState::InFlight, Some(worst)) => worst,
            _ => self.charged().map_or(0, |(spent, at_risk)| spent + at_risk),
        }
    }
}

impl Model {
    /// What the budget of `slot` holds in the current period, in billionths.
    pub(super) fn budget_used(&self, slot: usize) -> i64 {
        let Some(budget) = self.budgets[slot] else {
            return 0;
        };
        self.attempts
            .iter()
            .filter(|a| a.worst.is_some() && a.period == self.period)
            .filter(|a| budget.covers(a.provider))
            .map(MAttempt::held)
            .sum()
    }

    /// Attempt `a`'s worst case were it sent now; `None` at a provider without a price.
    pub(super) fn worst_case(&self, a: usize) -> Option<i64> {
        let at = &self.attempts[a];
        worst(at.provider, self.jobs[at.job].key)
    }

    /// Whether a budget covers attempt `a`.
    pub(super) fn covered(&self, a: usize) -> bool {
        let provider = self.attempts[a].provider;
        self.budgets.iter().flatten().any(|b| b.covers(provider))
    }

    /// The first budget, by name, that sending attempt `a` at `worst` would pass.
    pub(super) fn passed_by(&self, a: usize, worst: i64) -> Option<usize> {
        let provider = self.attempts[a].provider;
        (0..BUDGET_SLOTS).find(|&slot| {
            self.budgets[slot].is_some_and(|budget| {
                budget.covers(provider) && self.budget_used(slot) + worst > budget.limit
            })
        })
    }

    /// The send of attempt `a` would pass the budget of `slot`: nothing is sent, the attempt
    /// fails as `budget_reached`, and its job waits for the budgets' next period.
    pub(super) fn keep_back(&mut self, a: usize, slot: usize) -> Step {
        self.fail_attempt(a, "budget_reached", false)?;
        let j = self.attempts[a].job;
        self.jobs[j].budget_wait = self.jobs[j].status == JobStatus::Queued;
        self.note = "a budget kept a send back";
        Ok(Expect::KeptBack(slot))
    }

    /// `SetBudget`, `RemoveBudget` and `PeriodEnds` in the ledger.
    pub(super) fn budget_step(&mut self, op: &Act) -> Step {
        match *op {
            Op::SetBudget { slot, ask } => {
                let replaced = self.budgets[slot].replace(ask).is_some();
                if self.budget_used(slot) > ask.limit {
                    self.note = "a budget was set below what it holds";
                }
                Ok(Expect::BudgetSet { replaced })
            }
            Op::RemoveBudget(slot) => match self.budgets[slot].take() {
                Some(_) => Ok(Expect::Ok),
                None => Err(Expect::Refused("not_found")),
            },
            Op::PeriodEnds => {
                self.period += 1;
                for job in &mut self.jobs {
                    job.budget_wait = false;
                }
                Ok(Expect::Nothing)
            }
            _ => unreachable!("{op:?} is not a budget's step"),
        }
    }

    /// The budget steps that may come next, with their weights.
    pub(super) fn budget_acts(&self, dial: u32) -> Vec<(u32, BoxedStrategy<Act>)> {
        let set = self.budgets.iter().any(Option::is_some);
        let provider = prop_oneof![
            3 => Just(Prov::Plain),
            3 => Just(Prov::Ai),
            2 => Just(Prov::Spare),
            1 => Just(Prov::Keyed),
        ];
        let owner =
            prop_oneof![6 => Just(Whose::Every), 3 => Just(Whose::Ours), 1 => Just(Whose::Theirs)];
        let ask = (
            proptest::option::weighted(0.5, provider),
            owner,
            proptest::sample::select(LIMITS.to_vec()),
            proptest::bool::weighted(0.05),
            any::<bool>(),
        )
            .prop_map(|(provider, owner, limit, euro, month)| BudgetAsk {
                provider,
                owner,
                limit,
                euro,
                month,
            });
        // Mostly while a job waits for it, now and then with requests out.
        let waiting = self.jobs.iter().any(|j| j.budget_wait);
        vec![
            (
                if set { dial.min(1) } else { dial * 12 },
                (0..BUDGET_SLOTS, ask)
                    .prop_map(|(slot, ask)| Op::SetBudget { slot, ask })
                    .boxed(),
            ),
            (
                dial.min(u32::from(set)),
                (0..BUDGET_SLOTS).prop_map(Op::RemoveBudget).boxed(),
            ),
            (
                if waiting { dial * 2 } else { dial.min(1) },
                Just(Op::PeriodEnds).boxed(),
            ),
        ]
    }
}

/// The jobs whose wait is a budget's: their last attempt was kept back.
const LAST_KEPT_BACK: &str =
    "coalesce((SELECT a.error_kind FROM attempts a WHERE a.job_id = jobs.id
                                        ORDER BY a.number DESC LIMIT 1), '') = 'budget_reached'";

impl Ledger {
    /// Moves the clock past the waits of the jobs a budget kept back (`budgets`), or past
    /// every other wait, by writing only their `not_before`.
    pub(super) async fn end_waits(&self, budgets: bool) {
        let which = if budgets {
            LAST_KEPT_BACK.to_owned()
        } else {
            format!("NOT ({LAST_KEPT_BACK})")
        };
        let set = "UPDATE jobs SET not_before";
        let sqlite = format!("{set} = $1 WHERE not_before IS NOT NULL AND {which}");
        let postgres =
            format!("{set} = CAST($1 AS timestamptz) WHERE not_before IS NOT NULL AND {which}");
        let sql = Sql {
            sqlite: &sqlite,
            postgres: &postgres,
        };
        self.raw.execute(sql, &[PAST]).await.expect("waits end");
    }

    /// Moves `sent_at` back by `hours`, of the attempts with a price (`priced`) or without:
    /// the first are what budgets count by period, the others what hard deadlines and key
    /// retentions are counted from.
    pub(super) async fn move_sent(&self, hours: u32, priced: bool) {
        let which = if priced { "NOT NULL" } else { "NULL" };
        let at = format!("WHERE sent_at IS NOT NULL AND currency IS {which}");
        let sqlite = format!(
            "UPDATE attempts SET sent_at = strftime('%Y-%m-%dT%H:%M:%fZ', sent_at, '-' || $1 || ' hours') {at}"
        );
        let postgres = format!(
            "UPDATE attempts SET sent_at = sent_at - CAST($1 || ' hours' AS interval) {at}"
        );
        let sql = Sql {
            sqlite: &sqlite,
            postgres: &postgres,
        };
        let hours = hours.to_string();
        self.raw.execute(sql, &[&hours]).await.expect("hours pass");
    }
}

impl Ledger {
    /// `SetBudget`, `RemoveBudget` and `PeriodEnds`, as the person and the clock do them.
    pub(super) async fn budget_step(&mut self, act: &Act) -> Expect {
        match *act {
            Op::SetBudget { slot, ask } => {
                let set = self
                    .person()
                    .set_budget(&budget_name(slot), &ask.json(), None)
                    .await;
                match set {
                    Ok((budget, replaced)) => {
                        // Rule 12 counts from what it held as it was set.
                        self.held.borrow_mut()[slot] = Some(nanos(&budget.used));
                        Expect::BudgetSet { replaced }
                    }
                    Err(e) => self.refusal(e),
                }
            }
            Op::RemoveBudget(slot) => {
                let removed = self.person().remove_budget(&budget_name(slot), None).await;
                if removed.is_ok() {
                    self.held.borrow_mut()[slot] = None;
                }
                self.done(removed)
            }
            Op::PeriodEnds => {
                // Every priced attempt was sent in a period that is over, day or month.
                self.move_sent(40 * 24, true).await;
                self.end_waits(true).await;
                Expect::Nothing
            }
            _ => unreachable!("{act:?} is not a budget's step"),
        }
    }

    /// What a send the ledger kept back says: the budget its `budget_reached` event names.
    pub(super) async fn kept_back(&self, attempt: usize, job_id: &str) -> Expect {
        let ctx = self.ctx();
        let d = self
            .person()
            .job(OWNER, job_id)
            .await
            .unwrap_or_else(|e| panic!("{ctx}: {e:?}"));
        let id = self.attempts[attempt].as_str();
        let named: Vec<&str> = d
            .events
            .iter()
            .filter(|e| e.kind == "budget_reached" && e.attempt_id.as_deref() == Some(id))
            .filter_map(|e| e.detail["budget"].as_str())
            .collect();
        assert_eq!(
            named.len(),
            1,
            "{ctx}: attempt {attempt} was kept back: one budget_reached event names its budget"
        );
        Expect::KeptBack(slot_of(named[0]))
    }
}

/// An amount the ledger shows, in billionths.
pub(super) fn nanos(text: &str) -> i64 {
    Amount::parse(text)
        .ok()
        .and_then(Amount::nanos)
        .unwrap_or_else(|| panic!("{text} is not an amount"))
}

/// A new period lets every job be sent under every budget: no limit is below one request.
#[test]
fn every_limit_holds_any_one_request() {
    for key in 0..KEYS.len() {
        for p in Prov::ALL {
            let worst = worst(p, key).unwrap_or(0);
            assert!(LIMITS.iter().all(|&limit| limit >= worst), "{p:?} {key}");
        }
    }
}
