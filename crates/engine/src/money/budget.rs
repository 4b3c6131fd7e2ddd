//! Budgets (SPEC §17): a limit on what attempts may spend in a day or a month, for one owner's
//! jobs or every owner's, at one provider or every one, in one currency.

use serde::{Deserialize, Serialize};

use super::Amount;
use crate::error::{Error, Result};

/// A budget's period: the UTC day or month it counts in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum BudgetPeriod {
    Day,
    Month,
}

impl BudgetPeriod {
    pub fn as_str(self) -> &'static str {
        match self {
            BudgetPeriod::Day => "day",
            BudgetPeriod::Month => "month",
        }
    }
}

/// What `budget set NAME --json …` and `PUT /v1/budgets/{name}` take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct BudgetConfig {
    /// Only this owner's jobs; absent: every owner's.
    #[serde(default)]
    pub owner: Option<String>,
    /// Only attempts at this provider; absent: at every provider.
    #[serde(default)]
    pub provider: Option<String>,
    /// What attempts may spend in a period, a decimal string.
    #[cfg_attr(feature = "openapi", schema(value_type = String, example = "10.00"))]
    pub limit: Amount,
    /// The currency of the limit; attempts charged in another are not counted.
    pub currency: String,
    pub period: BudgetPeriod,
}

impl BudgetConfig {
    /// Reads a budget's JSON, naming the field at fault.
    pub fn parse(text: &str) -> Result<BudgetConfig> {
        let config: BudgetConfig = serde_json::from_str(text).map_err(|e| {
            Error::invalid_input(
                "budget",
                format!("{e}; a budget is {{\"limit\": \"10.00\", \"currency\": \"USD\", \"period\": \"day\"|\"month\", \"provider\"?, \"owner\"?}}"),
            )
        })?;
        super::check_currency(&config.currency, "budget")?;
        if config.limit.nanos().is_none() {
            return Err(Error::invalid_input(
                "budget.limit",
                format!("{} is more than onejob can count", config.limit),
            ));
        }
        Ok(config)
    }
}

/// A budget as listed, with what it holds in its period now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Budget {
    pub name: String,
    /// Only this owner's jobs; null: every owner's.
    pub owner: Option<String>,
    /// Only attempts at this provider; null: every provider.
    pub provider: Option<String>,
    pub currency: String,
    /// What attempts may spend in a period, a decimal string.
    pub limit: String,
    pub period: BudgetPeriod,
    /// What it holds in its period now, a decimal string: attempts in flight or `unknown` at
    /// their worst case, and what ended ones spent.
    pub used: String,
    pub created_at: String,
    pub updated_at: String,
}
