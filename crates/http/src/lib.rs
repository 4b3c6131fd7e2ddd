//! onejob-http: the HTTP API of SPEC §15, the engine's third face beside the window and the
//! command line. Each handler parses, makes one engine call and maps the answer; every rule
//! of SPEC §2–§9 stays in the engine. Errors leave as problem+json (`problem.rs`), the owner
//! comes only from the bearer token (`auth.rs`), and the connections, their limits and the
//! graceful stop are `serve.rs`.

mod auth;
mod body;
mod budgets;
mod bulk;
mod conn;
mod events;
mod jobs;
mod key;
mod long;
pub mod openapi;
pub mod problem;
mod query;
mod serve;
mod spend;

use std::sync::Arc;
use std::time::Duration;

use axum::routing::{get, post};
use axum::Router;
use onejob_engine::{Engine, Result};
use tokio::sync::watch;

pub use serve::{is_loopback, serve, tls_config, Limits, Served};

/// The largest request body read (SPEC §15): past it the answer is 413.
pub const MAX_BODY: usize = 1024 * 1024;
/// How long a request, its headers and its body together, may take to arrive.
pub const ARRIVAL_DEADLINE: Duration = Duration::from_secs(10);
/// How often a long wait or a stream reads the ledger again even without news: a PostgreSQL
/// notification sent while the listening connection is being made again (after an outage) is
/// lost, an event may be held back by an older transaction still open, and one that aborts
/// announces nothing.
const RECHECK: Duration = Duration::from_secs(1);

/// What every handler shares: the engine, the ledger's change counter, whether the server is
/// stopping (long waits and streams end then), each token's long requests, and what the ledger
/// recently said of tokens.
#[derive(Clone)]
pub struct Api {
    engine: Engine,
    changes: watch::Receiver<u64>,
    stopping: watch::Receiver<bool>,
    shares: Arc<long::Shares>,
    tokens: Arc<auth::Tokens>,
    /// The bulk operations this server is deciding.
    bulk: Arc<bulk::Running>,
}

impl Api {
    /// The API over `engine`; `stopping` turns true when the server starts its graceful stop.
    pub async fn new(engine: Engine, stopping: watch::Receiver<bool>) -> Result<Api> {
        let changes = engine
            .changes(onejob_engine::executor::CHANGE_CHECK)
            .await?;
        Ok(Api {
            engine,
            changes,
            stopping,
            shares: Arc::new(long::Shares::new(Limits::default().max_connections)),
            tokens: Arc::default(),
            bulk: Arc::default(),
        })
    }

    /// The API for a server bound by `limits`: each token's share of long requests is a quarter
    /// of its connections.
    pub fn with_limits(mut self, limits: &Limits) -> Api {
        self.shares = Arc::new(long::Shares::new(limits.max_connections));
        self
    }
}

/// Every route of SPEC §15, with the body limit and problem+json for every error answer.
pub fn router(api: Api) -> Router {
    Router::new()
        .route("/v1/jobs", post(jobs::submit).get(jobs::list))
        .route("/v1/jobs/{id}", get(jobs::show))
        .route("/v1/jobs/{id}/cancel", post(jobs::cancel))
        .route("/v1/jobs/{id}/retry", post(jobs::retry))
        .route("/v1/attempts/{id}/resolve", post(jobs::resolve))
        .route("/v1/bulk", post(bulk::start))
        .route("/v1/bulk/{id}", get(bulk::show))
        .route("/v1/spend", get(spend::show))
        .route("/v1/budgets", get(budgets::list))
        .route(
            "/v1/budgets/{name}",
            axum::routing::put(budgets::set).delete(budgets::remove),
        )
        .route("/v1/events", get(events::stream))
        .route("/v1/openapi.json", get(openapi::serve))
        .fallback(problem::no_route)
        .layer(tower_http::limit::RequestBodyLimitLayer::new(MAX_BODY))
        .layer(axum::middleware::map_response(problem::as_problem))
        .with_state(api)
}
