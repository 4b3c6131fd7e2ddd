//! Who is asking: `Authorization: Bearer TOKEN`, and the owner the ledger says the token
//! belongs to. Nothing else in a request can name an owner.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use onejob_engine::Error;

use crate::problem::Problem;
use crate::Api;

/// The owner of the request's token.
pub struct Owner(pub String);

impl FromRequestParts<Api> for Owner {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, api: &Api) -> Result<Owner, Problem> {
        let token = bearer(parts)?;
        Ok(Owner(api.engine.authenticate(token).await?))
    }
}

/// The bearer token of the request. Missing, malformed, unknown and revoked all get the one
/// answer.
pub fn bearer(parts: &Parts) -> Result<&str, Problem> {
    let token = parts
        .headers
        .get(AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| {
            let (scheme, token) = v.split_once(' ')?;
            scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
        })
        .filter(|t| !t.is_empty())
        .ok_or_else(Error::unauthorized)?;
    Ok(token)
}
