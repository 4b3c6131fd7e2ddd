//! Budgets (SPEC §17): set, listed and removed by a person or an owner, and reserved against
//! when an attempt is sent (docs/adr/0063).

use std::time::Duration;

use serde_json::json;

use super::finish;
use crate::error::{Error, Result};
use crate::intent::{validate_name, validate_owner};
use crate::money::{Amount, Budget, BudgetConfig, BudgetPeriod, Charge};
use crate::store::budgets::{self as budget_rows, BudgetRow, NewBudget};
use crate::store::Handle;
use crate::Engine;

/// A budget an attempt's worst case would pass: its name, and how long until its next period.
pub(crate) struct Reached {
    pub name: String,
    pub wait: Duration,
    /// Held now, and the limit, in billionths.
    pub used: i64,
    pub limit: i64,
}

impl Reached {
    /// The `budget_reached` event's detail.
    pub fn detail(&self, worst: i64) -> serde_json::Value {
        json!({
            "budget": self.name,
            "limit": Amount::from_nanos(self.limit).to_string(),
            "used": Amount::from_nanos(self.used).to_string(),
            "worst_case": Amount::from_nanos(worst).to_string(),
            "wait_ms": u64::try_from(self.wait.as_millis()).unwrap_or(u64::MAX),
        })
    }
}

/// Reserves `charge` for attempt `attempt_id` against every budget that covers it, in the
/// transaction that moves it to `in_flight`: each budget's row is taken first (PostgreSQL:
/// `FOR UPDATE`; SQLite: the writer holds the file), then what it holds is read, in one round
/// trip, so a send on another host under the same budget has either committed (and is counted)
/// or waits. The first budget the worst case would pass, if any; the reservation itself is the
/// attempt's own charge, written by the move.
pub(crate) async fn reserve(
    tx: &mut impl Handle,
    attempt_id: &str,
    charge: &Charge,
) -> Result<Option<Reached>> {
    for budget in budget_rows::covering(tx, attempt_id, &charge.currency).await? {
        let used = budget.used;
        if used.saturating_add(charge.worst_nanos) > budget.limit_nanos {
            let wait = Duration::from_millis(u64::try_from(budget.next_in_ms).unwrap_or(0));
            return Ok(Some(Reached {
                name: budget.name,
                wait,
                used,
                limit: budget.limit_nanos,
            }));
        }
    }
    Ok(None)
}

impl Engine {
    /// Sets budget `name` from its JSON, replacing one of the same name; for `scope` (an
    /// owner of the HTTP API) only that owner's own: its `owner` is the owner, and another
    /// owner's budget of that name is `not_found`, never replaced. Returns it as listed, and
    /// whether one was replaced.
    pub async fn set_budget(
        &self,
        name: &str,
        config_json: &str,
        scope: Option<&str>,
    ) -> Result<(Budget, bool)> {
        validate_name("budget.name", name)?;
        let mut config = BudgetConfig::parse(config_json)?;
        if let Some(owner) = scope {
            validate_owner(owner)?;
            match config.owner.as_deref() {
                None => config.owner = Some(owner.to_owned()),
                Some(named) if named == owner => {}
                Some(_) => {
                    return Err(Error::invalid_input(
                        "budget.owner",
                        "an owner sets only budgets of their own jobs; leave owner out",
                    ))
                }
            }
        }
        if let Some(owner) = &config.owner {
            validate_owner(owner)?;
        }
        if let Some(provider) = &config.provider {
            validate_name("budget.provider", provider)?;
        }
        // Checked by `BudgetConfig::parse`.
        let limit_nanos = config.limit.nanos().unwrap_or(i64::MAX);
        let mut tx = self.begin().await?;
        let outcome = async {
            let before = budget_rows::named(&mut tx, name).await?;
            if let (Some(owner), Some(before)) = (scope, &before) {
                if before.owner_id.as_deref() != Some(owner) {
                    return Err(Error::not_found("budget", name));
                }
            }
            let replaced = before.is_some();
            budget_rows::upsert(
                &mut tx,
                &NewBudget {
                    name,
                    owner: config.owner.as_deref(),
                    provider: config.provider.as_deref(),
                    currency: &config.currency,
                    limit_nanos,
                    period: config.period.as_str(),
                },
            )
            .await?;
            let row = budget_rows::named(&mut tx, name)
                .await?
                .ok_or_else(|| Error::internal("a budget vanished as it was set"))?;
            let used = budget_rows::used(&mut tx, name).await?;
            Ok((into_budget(row, used)?, replaced))
        }
        .await;
        finish(tx, outcome).await
    }

    /// The budgets (of `scope`'s own, when given), by name, each with what it holds now.
    pub async fn budgets(&self, scope: Option<&str>) -> Result<Vec<Budget>> {
        if let Some(owner) = scope {
            validate_owner(owner)?;
        }
        let mut conn = self.read().await?;
        let mut budgets = Vec::new();
        for row in budget_rows::list(&mut conn, scope).await? {
            let used = budget_rows::used(&mut conn, &row.name).await?;
            budgets.push(into_budget(row, used)?);
        }
        Ok(budgets)
    }

    /// Removes budget `name` (only `scope`'s own, when given); `not_found` when there is none.
    pub async fn remove_budget(&self, name: &str, scope: Option<&str>) -> Result<()> {
        validate_name("budget.name", name)?;
        let mut tx = self.begin().await?;
        let outcome = async {
            if budget_rows::delete(&mut tx, name, scope).await? {
                Ok(())
            } else {
                Err(Error::not_found("budget", name))
            }
        }
        .await;
        finish(tx, outcome).await
    }
}

fn into_budget(row: BudgetRow, used: i64) -> Result<Budget> {
    let period = match row.period.as_str() {
        "day" => BudgetPeriod::Day,
        "month" => BudgetPeriod::Month,
        other => {
            return Err(Error::internal(format!(
                "budget {} has an unknown period {other}",
                row.name
            )))
        }
    };
    Ok(Budget {
        name: row.name,
        owner: row.owner_id,
        provider: row.provider,
        currency: row.currency,
        limit: Amount::from_nanos(row.limit_nanos).to_string(),
        period,
        used: Amount::from_nanos(used).to_string(),
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}
