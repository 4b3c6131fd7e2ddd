//! What attempts cost (SPEC §17, ADR 0062): an attempt's charge as it is sent, the rule of what
//! it has spent and has at risk, and spend summed by day, provider or owner.

use serde::{Deserialize, Serialize};

use super::{Amount, Price};

/// What spend is summed by (SPEC §17).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, specta::Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SpendBy {
    /// The day each attempt was sent, UTC (`2026-12-04`).
    #[default]
    Day,
    Provider,
    Owner,
}

impl SpendBy {
    pub fn as_str(self) -> &'static str {
        match self {
            SpendBy::Day => "day",
            SpendBy::Provider => "provider",
            SpendBy::Owner => "owner",
        }
    }
}

/// One line of spend: a day, a provider or an owner, in one currency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SpendLine {
    /// The day (`2026-12-04`), the provider's name or the owner, as the spend was summed by.
    pub key: String,
    #[serde(flatten)]
    pub cost: Cost,
}

/// Spend summed by day, provider or owner, and its total (SPEC §17).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Spend {
    pub by: SpendBy,
    pub lines: Vec<SpendLine>,
    /// Every line together; `None` when nothing was charged.
    pub total: Option<Cost>,
}

impl Spend {
    /// The lines as `onejob spend` and `GET /v1/spend` give them (SPEC §17): each with its
    /// day, provider or owner under that name.
    pub fn answer_lines(&self) -> Vec<serde_json::Value> {
        self.lines
            .iter()
            .map(|line| {
                serde_json::json!({
                    self.by.as_str(): line.key,
                    "currency": line.cost.currency,
                    "spent": line.cost.spent,
                    "at_risk": line.cost.at_risk,
                })
            })
            .collect()
    }

    /// The whole answer: `{"spend": [lines], "total": {…} | null}`.
    pub fn answer(&self) -> serde_json::Value {
        serde_json::json!({ "spend": self.answer_lines(), "total": self.total })
    }
}

/// What an attempt is charged when it is sent at a provider with a price: the price (a copy,
/// so a later change of price changes nothing spent) and its worst case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Charge {
    pub currency: String,
    /// The price as JSON.
    pub price: String,
    pub worst_nanos: i64,
}

impl Price {
    /// The charge of one request sent with `body` at this price (its worst case as
    /// [`Price::worst_nanos`] counts it, `i64::MAX` billionths past 64 bits).
    pub(crate) fn charge(&self, body: &str, context_window: Option<u64>) -> Charge {
        Charge {
            currency: self.currency.clone(),
            price: serde_json::to_string(self).unwrap_or_default(),
            worst_nanos: self.worst_nanos(body, context_window).unwrap_or(i64::MAX),
        }
    }
}

/// What an attempt cost, or a job in one currency (SPEC §17), amounts as decimal strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Cost {
    /// The currency's ISO 4217 code.
    pub currency: String,
    /// Spent: answered attempts at what they used (at their worst case where the answer
    /// reported no usage), and attempts settled as done or abandoned at their worst case.
    /// An attempt proven never sent, or refused before any effect, adds nothing.
    pub spent: String,
    /// At risk: `unknown` attempts at their worst case, until they are resolved.
    pub at_risk: String,
}

/// An attempt's money as its ledger row holds it, in billionths.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Charged {
    pub spent: i64,
    pub at_risk: i64,
}

/// What an attempt in `state`, ended with `error_kind`, has spent and has at risk, given its
/// worst case and its settled cost (ADR 0062). The same rule is written in SQL for the sums of
/// spend (`attempts/spend.sql`), of a budget on PostgreSQL (`budgets/used.sql`) and in SQLite's
/// `attempts.held_nanos` (migration 0014, held to this by `the_ledgers_held_rule_is_the_money_rule`).
pub(crate) fn charged(
    state: crate::attempt::AttemptState,
    error_kind: Option<&str>,
    worst: i64,
    cost: Option<i64>,
) -> Charged {
    use crate::attempt::AttemptState as S;
    match state {
        S::Pending | S::InFlight => Charged::default(),
        S::Unknown => Charged {
            spent: 0,
            at_risk: worst,
        },
        S::Failed if error_kind.is_some_and(costs_nothing) => Charged::default(),
        _ => Charged {
            spent: cost.unwrap_or(worst),
            at_risk: 0,
        },
    }
}

/// What an attempt holds against a budget that covers it (ADR 0063): in flight, its worst case,
/// reserved; otherwise what it spent and what it has at risk. The ledger keeps the sum of it
/// per day (migration 0014); this is the rule its SQL is held to.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn held(
    state: crate::attempt::AttemptState,
    error_kind: Option<&str>,
    worst: i64,
    cost: Option<i64>,
) -> i64 {
    match state {
        crate::attempt::AttemptState::InFlight => worst,
        _ => {
            let c = charged(state, error_kind, worst, cost);
            c.spent + c.at_risk
        }
    }
}

/// The failures that prove a request was never sent, or refused before it had any effect: they
/// cost nothing (SPEC §17). Every other end of a sent attempt is charged.
pub(crate) const FREE_FAILURES: [&str; 10] = [
    "never_sent",
    "misconfigured",
    "budget_reached",
    "rejected",
    "throttled",
    "server_error",
    "server_error_keyed",
    "reconciled_failed",
    "resolved_by_person",
    "cancelled",
];

/// [`FREE_FAILURES`] as a JSON array, as the ledger's sums take them.
pub(crate) fn free_failures_json() -> String {
    serde_json::to_string(&FREE_FAILURES).unwrap_or_default()
}

/// Whether a failure of this kind costs nothing.
pub(crate) fn costs_nothing(kind: &str) -> bool {
    FREE_FAILURES.contains(&kind)
}

/// The cost of each currency among `attempts`, in the order each currency first appears.
pub fn totals<'a>(attempts: impl IntoIterator<Item = &'a crate::model::Attempt>) -> Vec<Cost> {
    let mut sums: Vec<(String, i64, i64)> = Vec::new();
    for cost in attempts.into_iter().filter_map(|a| a.cost.as_ref()) {
        let nanos = |text: &str| {
            Amount::parse(text)
                .ok()
                .and_then(Amount::nanos)
                .unwrap_or(0)
        };
        let (spent, at_risk) = (nanos(&cost.spent), nanos(&cost.at_risk));
        match sums.iter_mut().find(|(c, _, _)| *c == cost.currency) {
            Some(sum) => {
                sum.1 = sum.1.saturating_add(spent);
                sum.2 = sum.2.saturating_add(at_risk);
            }
            None => sums.push((cost.currency.clone(), spent, at_risk)),
        }
    }
    sums.into_iter()
        .map(|(currency, spent, at_risk)| Cost {
            currency,
            spent: Amount::from_nanos(spent).to_string(),
            at_risk: Amount::from_nanos(at_risk).to_string(),
        })
        .collect()
}
