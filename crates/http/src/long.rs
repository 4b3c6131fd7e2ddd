//! Long requests (event streams, `?wait`): each token holds at most its share of the server's
//! connections in them, so no owner can keep another's requests from being answered, and each
//! ends within seconds of its token's revocation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::StatusCode;
use onejob_engine::Error;

use crate::auth;
use crate::problem::Problem;
use crate::Api;

/// How often a long request asks the ledger again whether its token still stands: with the
/// read's own time, a revocation ends it well within the 5 s SPEC §15 allows.
pub const TOKEN_RECHECK: Duration = Duration::from_secs(2);
/// What a token past its share is told to wait before trying again, in seconds.
const RETRY_AFTER_S: u32 = 5;

/// How many long requests each token holds now, and the most one may.
pub struct Shares {
    held: Mutex<HashMap<String, usize>>,
    most: usize,
}

impl Shares {
    /// A quarter of `max_connections` per token, and at least one.
    pub fn new(max_connections: usize) -> Shares {
        Shares {
            held: Mutex::new(HashMap::new()),
            most: (max_connections / 4).max(1),
        }
    }

    fn take(self: &Arc<Self>, token: &str) -> Result<Held, Problem> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        let count = held.entry(token.to_owned()).or_default();
        if *count >= self.most {
            return Err(Problem::too_many(
                StatusCode::TOO_MANY_REQUESTS,
                format!(
                    "this token already holds {} long requests (event streams and waits), its \
                     share of the server's connections; end one, or try again later",
                    self.most
                ),
                RETRY_AFTER_S,
            ));
        }
        *count += 1;
        Ok(Held {
            shares: self.clone(),
            token: token.to_owned(),
        })
    }
}

/// One long request counted against its token's share until it is dropped.
pub struct Held {
    shares: Arc<Shares>,
    token: String,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = self.shares.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = held.get_mut(&self.token) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                held.remove(&self.token);
            }
        }
    }
}

/// The owner of a request and the token that says so, for a request that may last.
pub struct Caller {
    pub owner: String,
    token: String,
    checked: Instant,
}

impl FromRequestParts<Api> for Caller {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, api: &Api) -> Result<Caller, Problem> {
        let token = auth::bearer(parts)?.to_owned();
        let owner = api.tokens.owner(&api.engine, &token).await?;
        Ok(Caller {
            owner,
            token,
            checked: Instant::now(),
        })
    }
}

impl Caller {
    /// Counts this request against its token's share: `429` past it.
    pub fn hold(&self, api: &Api) -> Result<Held, Problem> {
        api.shares.take(&self.token)
    }

    /// When the token should next be asked about.
    pub fn next_check(&self) -> Instant {
        self.checked + TOKEN_RECHECK
    }

    /// Whether the token still names this owner, asked again once [`TOKEN_RECHECK`] has passed
    /// since the last time. A ledger that cannot be read says nothing against it: the request
    /// goes on, as it does through any outage.
    pub async fn still_allowed(&mut self, api: &Api) -> bool {
        if Instant::now() < self.next_check() {
            return true;
        }
        self.checked = Instant::now();
        match api.engine.authenticate(&self.token).await {
            Ok(owner) => owner == self.owner,
            Err(Error::Unauthorized { .. }) => false,
            Err(_) => true,
        }
    }
}
