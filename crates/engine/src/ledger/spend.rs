//! Spend (SPEC §17): what attempts cost, summed exactly by the ledger, and money at risk.

use super::read::ledger_time;
use crate::error::{Error, Result};
use crate::intent::validate_owner;
use crate::money::{Amount, Cost, Spend, SpendBy, SpendLine};
use crate::store::attempts as attempt_rows;
use crate::Engine;

impl Engine {
    /// Spend by day, provider or owner: of `owner`'s jobs (`None`: every owner's, for a person
    /// at their own ledger), of attempts sent since `since` (RFC 3339 or a date), in `currency`
    /// (`None`: the one currency charged). Amounts of two currencies are never added: where
    /// attempts were charged in several and none is named, `invalid_input` names them.
    pub async fn spend(
        &self,
        owner: Option<&str>,
        by: SpendBy,
        since: Option<String>,
        currency: Option<&str>,
    ) -> Result<Spend> {
        if let Some(owner) = owner {
            validate_owner(owner)?;
        }
        let since = ledger_time("since", since)?;
        let mut conn = self.read().await?;
        let rows =
            attempt_rows::spend(&mut conn, by.as_str(), owner, since.as_deref(), currency).await?;
        let mut currencies: Vec<&str> = rows.iter().map(|r| r.currency.as_str()).collect();
        currencies.sort_unstable();
        currencies.dedup();
        if currencies.len() > 1 {
            return Err(Error::invalid_input(
                "currency",
                format!(
                    "attempts were charged in {}; name one currency, as amounts of two are never added",
                    currencies.join(", ")
                ),
            ));
        }
        let (mut spent, mut at_risk) = (0i64, 0i64);
        for row in &rows {
            spent = spent.saturating_add(row.spent);
            at_risk = at_risk.saturating_add(row.at_risk);
        }
        let total = currencies.first().map(|currency| Cost {
            currency: (*currency).to_owned(),
            spent: Amount::from_nanos(spent).to_string(),
            at_risk: Amount::from_nanos(at_risk).to_string(),
        });
        let lines = rows
            .into_iter()
            .map(|row| SpendLine {
                key: row.key,
                cost: Cost {
                    currency: row.currency,
                    spent: Amount::from_nanos(row.spent).to_string(),
                    at_risk: Amount::from_nanos(row.at_risk).to_string(),
                },
            })
            .collect();
        Ok(Spend { by, lines, total })
    }
}
