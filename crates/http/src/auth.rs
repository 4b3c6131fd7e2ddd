//! Who is asking: `Authorization: Bearer TOKEN`, and the owner the ledger says the token
//! belongs to. Nothing else in a request can name an owner.
//!
//! What the ledger said of a token is kept for under a second, so a client's burst of requests
//! reads it once, and a revocation made by any process still reaches this server within the
//! second SPEC §15 allows.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use onejob_engine::{Engine, Error, Result};

use crate::problem::Problem;
use crate::Api;

/// How long an owner read for a token is trusted, counted from before the read began: a
/// revocation that commits at T is seen by every read begun after T, and what earlier reads
/// said is forgotten before T plus one second.
pub const TOKEN_TRUST: Duration = Duration::from_millis(900);
/// The most tokens kept at once; past it the memory starts over.
const MAX_KEPT: usize = 10_000;

/// The owner of the request's token.
pub struct Owner(pub String);

impl FromRequestParts<Api> for Owner {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, api: &Api) -> Result<Owner, Problem> {
        let token = bearer(parts)?;
        Ok(Owner(api.tokens.owner(&api.engine, token).await?))
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

/// Tokens the ledger recently said name an owner; a refusal is never kept.
#[derive(Default)]
pub struct Tokens {
    known: Mutex<HashMap<String, (String, Instant)>>,
}

impl Tokens {
    /// The owner `token` names: from memory while it is trusted, else from the ledger.
    pub async fn owner(&self, engine: &Engine, token: &str) -> Result<String> {
        let now = Instant::now();
        if let Some((owner, read_at)) = self.lock().get(token) {
            if now.saturating_duration_since(*read_at) < TOKEN_TRUST {
                return Ok(owner.clone());
            }
        }
        let owner = engine.authenticate(token).await?;
        let mut known = self.lock();
        if known.len() >= MAX_KEPT {
            known.clear();
        }
        known.insert(token.to_owned(), (owner.clone(), now));
        Ok(owner)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, (String, Instant)>> {
        self.known.lock().unwrap_or_else(|p| p.into_inner())
    }
}
