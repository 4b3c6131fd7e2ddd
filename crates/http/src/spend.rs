//! `GET /v1/spend` (SPEC §17): what the owner's attempts cost, by day, provider or owner, and
//! the money at risk in their `unknown` ones.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use onejob_engine::{Cost, SpendBy};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Owner;
use crate::openapi::CommonErrors;
use crate::problem::Problem;
use crate::query::Query;
use crate::Api;

/// The query of `GET /v1/spend`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SpendQuery {
    /// Sum by the day each attempt was sent (UTC), by provider, or by owner; `day` when not
    /// given.
    #[param(value_type = Option<String>, pattern = "^(day|provider|owner)?$")]
    by: Option<String>,
    /// Only attempts sent at or after this time (RFC 3339, or a date `YYYY-MM-DD` for its
    /// midnight UTC); empty is no filter.
    since: Option<String>,
    /// Only attempts charged in this currency (ISO 4217); needed where the owner's attempts
    /// were charged in several.
    currency: Option<String>,
}

/// The answer of `GET /v1/spend`, as `onejob spend` gives it.
#[derive(Serialize, ToSchema)]
pub struct SpendAnswer {
    /// One line a day, provider or owner and currency: the `day`, `provider` or `owner` (as
    /// asked), `currency`, and `spent` and `at_risk` as decimal strings.
    #[schema(value_type = Vec<Object>)]
    spend: Vec<serde_json::Value>,
    /// Every line together; null when nothing was charged.
    total: Option<Cost>,
}

/// `GET /v1/spend`.
#[utoipa::path(
    get, path = "/v1/spend", tag = "spend", operation_id = "get_spend",
    summary = "What the owner's attempts cost, and the money at risk",
    description = "Attempts at providers with a price, summed exactly by day, provider or owner: \
what answered attempts spent, and the worst case of `unknown` ones as money at risk until they \
are resolved (SPEC §17). Amounts are decimal strings; two currencies are never added.",
    params(SpendQuery),
    responses(
        (status = 200, description = "The owner's spend", body = SpendAnswer),
        CommonErrors,
    ),
)]
pub async fn show(
    State(api): State<Api>,
    Owner(owner): Owner,
    Query(query): Query<SpendQuery>,
) -> Result<Response, Problem> {
    let by = match query.by.as_deref().filter(|b| !b.is_empty()) {
        None | Some("day") => SpendBy::Day,
        Some("provider") => SpendBy::Provider,
        Some("owner") => SpendBy::Owner,
        Some(other) => {
            return Err(Problem::invalid(
                "by",
                format!("{other:?} is not what spend is summed by; one of day, provider, owner"),
            ))
        }
    };
    let since = query.since.filter(|s| !s.is_empty());
    let currency = query.currency.filter(|c| !c.is_empty());
    let spend = api
        .engine
        .spend(Some(&owner), by, since, currency.as_deref())
        .await?;
    let answer = SpendAnswer {
        spend: spend.answer_lines(),
        total: spend.total,
    };
    Ok(axum::Json(answer).into_response())
}
