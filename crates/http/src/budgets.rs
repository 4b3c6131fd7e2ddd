//! `/v1/budgets` (SPEC §17): an owner's own budgets, each with what it holds in its period now.

use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use onejob_engine::{Budget, BudgetConfig};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::auth::Owner;
use crate::body::Text;
use crate::openapi::{BodyErrors, CommonErrors, NotFound};
use crate::problem::Problem;
use crate::Api;

/// The path of one budget: `/v1/budgets/{name}`.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct BudgetName {
    /// The budget's name: 1-64 characters of `A-Za-z0-9._-`.
    name: String,
}

/// The answer of `GET /v1/budgets`.
#[derive(Serialize, ToSchema)]
pub struct Budgets {
    /// The owner's budgets, by name.
    budgets: Vec<Budget>,
}

/// The answer of `PUT /v1/budgets/{name}`.
#[derive(Serialize, ToSchema)]
pub struct BudgetSet {
    budget: Budget,
    /// Whether a budget of that name was replaced.
    replaced: bool,
}

/// The answer of `DELETE /v1/budgets/{name}`.
#[derive(Serialize, ToSchema)]
pub struct BudgetRemoved {
    /// The name of the budget removed.
    removed: String,
}

/// `GET /v1/budgets`.
#[utoipa::path(
    get, path = "/v1/budgets", tag = "spend", operation_id = "list_budgets",
    summary = "The owner's budgets",
    description = "Each budget with what it holds in its period now: its attempts in flight or \
`unknown` at their worst case, and what ended ones spent.",
    responses(
        (status = 200, description = "The owner's budgets, by name", body = Budgets),
        CommonErrors,
    ),
)]
pub async fn list(State(api): State<Api>, Owner(owner): Owner) -> Result<Response, Problem> {
    let budgets = api.engine.budgets(Some(&owner)).await?;
    Ok(axum::Json(Budgets { budgets }).into_response())
}

/// `PUT /v1/budgets/{name}`.
#[utoipa::path(
    put, path = "/v1/budgets/{name}", tag = "spend", operation_id = "set_budget",
    summary = "Set one of the owner's budgets",
    description = "A limit on what the owner's attempts may spend in a UTC day or month, at one \
provider or every one, in one currency. An attempt whose worst case would pass it is not sent: \
its job waits, `queued`, until the next period, with a `budget_reached` event. Setting it again \
replaces it; another owner's budget of the name is `404`.",
    params(BudgetName),
    request_body(content = BudgetConfig, description = "The budget; `owner`, if given, must be \
the owner",
        example = json!({"limit": "10.00", "currency": "USD", "period": "day"})),
    responses(
        (status = 200, description = "The budget as set", body = BudgetSet),
        CommonErrors,
        BodyErrors,
        (status = 404, response = NotFound),
    ),
)]
pub async fn set(
    State(api): State<Api>,
    Owner(owner): Owner,
    Path(BudgetName { name }): Path<BudgetName>,
    Text(body): Text,
) -> Result<Response, Problem> {
    let (budget, replaced) = api.engine.set_budget(&name, &body, Some(&owner)).await?;
    Ok(axum::Json(BudgetSet { budget, replaced }).into_response())
}

/// `DELETE /v1/budgets/{name}`.
#[utoipa::path(
    delete, path = "/v1/budgets/{name}", tag = "spend", operation_id = "remove_budget",
    summary = "Remove one of the owner's budgets",
    params(BudgetName),
    responses(
        (status = 200, description = "The budget was removed", body = BudgetRemoved),
        CommonErrors,
        (status = 404, response = NotFound),
    ),
)]
pub async fn remove(
    State(api): State<Api>,
    Owner(owner): Owner,
    Path(path): Path<BudgetName>,
) -> Result<Response, Problem> {
    api.engine.remove_budget(&path.name, Some(&owner)).await?;
    let removed = BudgetRemoved { removed: path.name };
    Ok(axum::Json(removed).into_response())
}
