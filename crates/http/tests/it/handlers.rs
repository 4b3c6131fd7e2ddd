//! The handlers in process: each request goes through the router as `onejob serve` builds it
//! (`onejob_http::router`, with its body limit and problem+json layer), by `oneshot`, on a
//! real ledger (a SQLite file, or a PostgreSQL database on the PostgreSQL pass), with no
//! listener, no connection and no client between. What SPEC §15 says of each answer is checked
//! here; the same answers over real connections are in the command line's `serve` tests.

use axum::body::Body;
use axum::http::{header, Method, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use onejob_engine::testing::InternalCalls as _;
use onejob_engine::{AttemptError, Engine};
use serde_json::{json, Value};
use tokio::sync::watch;
use tower::ServiceExt;

/// A router over a fresh ledger with a provider `primary`, and a token for `alice`.
struct InProcess {
    router: Router,
    engine: Engine,
    token: String,
    _dir: tempfile::TempDir,
    _stopping: watch::Sender<bool>,
}

/// An answer read whole: its status, its headers and its body as JSON.
struct Answer {
    status: StatusCode,
    headers: axum::http::HeaderMap,
    body: Value,
}

impl InProcess {
    async fn new() -> InProcess {
        let dir = tempfile::tempdir().expect("a scratch folder");
        let ledger = onejob_testkit::ledger_location(&dir.path().join("ledger.db"));
        let engine = Engine::open(&ledger).await.expect("the ledger opens");
        let provider = json!({
            "name": "primary",
            "kind": "http",
            "base_url": "http://127.0.0.1:9/primary",
            "soft_timeout_ms": 1000,
            "hard_timeout_ms": 5000,
            "honours_idempotency_key": false
        });
        engine
            .add_provider(&provider.to_string())
            .await
            .expect("provider");
        let (token, _) = engine.create_token("alice", None).await.expect("a token");
        let (stopping, stopped) = watch::channel(false);
        let api = onejob_http::Api::new(engine.clone(), stopped)
            .await
            .expect("the API starts");
        InProcess {
            router: onejob_http::router(api),
            engine,
            token,
            _dir: dir,
            _stopping: stopping,
        }
    }

    /// A token for another owner.
    async fn token_for(&self, owner: &str) -> String {
        self.engine
            .create_token(owner, None)
            .await
            .expect("a token")
            .0
    }

    async fn send(&self, request: Request<Body>) -> Answer {
        let response = self
            .router
            .clone()
            .oneshot(request)
            .await
            .expect("the router answers");
        let status = response.status();
        let headers = response.headers().clone();
        let bytes = response
            .into_body()
            .collect()
            .await
            .expect("the body")
            .to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&bytes)))
        };
        Answer {
            status,
            headers,
            body,
        }
    }

    fn request(&self, method: Method, path: &str, token: &str) -> axum::http::request::Builder {
        Request::builder()
            .method(method)
            .uri(path)
            .header(header::AUTHORIZATION, format!("Bearer {token}"))
    }

    async fn get(&self, path: &str) -> Answer {
        let request = self.request(Method::GET, path, &self.token);
        self.send(request.body(Body::empty()).expect("a request"))
            .await
    }

    async fn post(&self, path: &str, key: Option<&str>, body: &Value) -> Answer {
        self.post_as(&self.token.clone(), path, key, body).await
    }

    async fn post_as(&self, token: &str, path: &str, key: Option<&str>, body: &Value) -> Answer {
        let mut request = self
            .request(Method::POST, path, token)
            .header(header::CONTENT_TYPE, "application/json");
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        let body = Body::from(body.to_string());
        self.send(request.body(body).expect("a request")).await
    }

    async fn submit(&self, key: &str, input: Value) -> Answer {
        let intent = json!({ "route": ["primary"], "input": input });
        self.post("/v1/jobs", Some(key), &intent).await
    }
}

/// The problem's code, after checking its status and media type.
fn problem(answer: &Answer, status: StatusCode) -> String {
    assert_eq!(answer.status, status, "{}", answer.body);
    let media = answer.headers.get(header::CONTENT_TYPE);
    assert_eq!(
        media.and_then(|m| m.to_str().ok()),
        Some("application/problem+json"),
        "{}",
        answer.body
    );
    answer.body["code"].as_str().unwrap_or_default().to_owned()
}

fn job_id(answer: &Answer) -> String {
    answer.body["job"]["id"]
        .as_str()
        .expect("a job id")
        .to_owned()
}

#[tokio::test]
async fn a_submit_is_201_with_its_location_the_same_again_200_replayed_and_another_intent_422() {
    let api = InProcess::new().await;
    let first = api.submit("order-45", json!({ "amount": 100 })).await;
    assert_eq!(first.status, StatusCode::CREATED, "{}", first.body);
    let id = job_id(&first);
    assert_eq!(
        first.headers.get(header::LOCATION).map(|l| l.as_bytes()),
        Some(format!("/v1/jobs/{id}").as_bytes())
    );
    assert_eq!(first.body["replayed"], false);
    assert_eq!(first.body["job"]["status"], "queued");

    let again = api.submit("order-45", json!({ "amount": 100 })).await;
    assert_eq!(again.status, StatusCode::OK, "{}", again.body);
    assert_eq!(job_id(&again), id);
    assert_eq!(again.body["replayed"], true);
    assert_eq!(
        again
            .headers
            .get("idempotent-replayed")
            .map(|v| v.as_bytes()),
        Some(&b"true"[..])
    );

    let other = api.submit("order-45", json!({ "amount": 999 })).await;
    assert_eq!(
        problem(&other, StatusCode::UNPROCESSABLE_ENTITY),
        "idempotency_conflict"
    );
    assert_eq!(other.body["details"]["existing_job_id"], id.as_str());
}

#[tokio::test]
async fn without_a_token_or_with_a_bad_one_every_route_is_401_and_the_document_is_open() {
    let api = InProcess::new().await;
    for (method, path) in [
        (Method::GET, "/v1/jobs"),
        (Method::POST, "/v1/jobs"),
        (Method::GET, "/v1/bulk/00000000-0000-7000-8000-000000000000"),
    ] {
        let bare = Request::builder()
            .method(method.clone())
            .uri(path)
            .body(Body::empty())
            .expect("a request");
        let answer = api.send(bare).await;
        assert_eq!(
            problem(&answer, StatusCode::UNAUTHORIZED),
            "unauthorized",
            "{method} {path}"
        );
        let wrong = api
            .request(method.clone(), path, "oj_not-a-token")
            .body(Body::empty())
            .expect("a request");
        let answer = api.send(wrong).await;
        assert_eq!(
            problem(&answer, StatusCode::UNAUTHORIZED),
            "unauthorized",
            "{method} {path}"
        );
    }
    let document = Request::builder()
        .uri("/v1/openapi.json")
        .body(Body::empty())
        .expect("a request");
    let answer = api.send(document).await;
    assert_eq!(answer.status, StatusCode::OK);
    assert!(answer.body["paths"]["/v1/jobs"].is_object());
}

#[tokio::test]
async fn another_owners_job_is_404_by_every_route_and_missing_from_the_list() {
    let api = InProcess::new().await;
    let id = job_id(&api.submit("mine", json!(1)).await);
    let bob = api.token_for("bob").await;
    let show = api
        .request(Method::GET, &format!("/v1/jobs/{id}"), &bob)
        .body(Body::empty())
        .expect("a request");
    assert_eq!(
        problem(&api.send(show).await, StatusCode::NOT_FOUND),
        "not_found"
    );
    for path in [
        format!("/v1/jobs/{id}/cancel"),
        format!("/v1/jobs/{id}/retry"),
    ] {
        let answer = api.post_as(&bob, &path, Some("k"), &json!({})).await;
        assert_eq!(
            problem(&answer, StatusCode::NOT_FOUND),
            "not_found",
            "{path}"
        );
    }
    let list = api
        .request(Method::GET, "/v1/jobs", &bob)
        .body(Body::empty())
        .expect("a request");
    let listed = api.send(list).await;
    assert_eq!(listed.status, StatusCode::OK);
    assert_eq!(listed.body["jobs"], json!([]));
    // And still there for its owner, unmoved.
    let mine = api.get(&format!("/v1/jobs/{id}")).await;
    assert_eq!(mine.status, StatusCode::OK);
    assert_eq!(mine.body["job"]["status"], "queued");
}

#[tokio::test]
async fn bad_input_is_400_naming_the_field_and_changes_nothing() {
    let api = InProcess::new().await;
    let intent = json!({ "route": ["primary"], "input": 1 });
    let keyless = api.post("/v1/jobs", None, &intent).await;
    assert_eq!(problem(&keyless, StatusCode::BAD_REQUEST), "invalid_input");
    assert_eq!(keyless.body["details"]["field"], "Idempotency-Key");

    let unrouted = api
        .post("/v1/jobs", Some("no-route"), &json!({ "input": 1 }))
        .await;
    assert_eq!(problem(&unrouted, StatusCode::BAD_REQUEST), "invalid_input");
    assert_eq!(
        unrouted.body["details"]["field"], "intent.route",
        "{}",
        unrouted.body
    );

    for (query, field) in [
        ("status=lost", "status"),
        ("limit=many", "limit"),
        ("after=not-a-cursor", "after"),
        ("created_after=last%20tuesday", "created_after"),
    ] {
        let answer = api.get(&format!("/v1/jobs?{query}")).await;
        assert_eq!(problem(&answer, StatusCode::BAD_REQUEST), "invalid_input");
        assert_eq!(answer.body["details"]["field"], field, "{query}");
    }
    let listed = api.get("/v1/jobs").await;
    assert_eq!(listed.body["jobs"], json!([]), "nothing was submitted");
}

#[tokio::test]
async fn cancel_retry_and_resolve_move_a_job_and_a_refused_move_is_409() {
    let api = InProcess::new().await;
    let id = job_id(&api.submit("moves", json!({})).await);

    let retried = api
        .post(&format!("/v1/jobs/{id}/retry"), Some("r1"), &json!({}))
        .await;
    assert_eq!(retried.status, StatusCode::OK, "{}", retried.body);
    let attempt = retried.body["attempt"]["id"]
        .as_str()
        .expect("an attempt")
        .to_owned();
    assert_eq!(retried.body["attempt"]["state"], "pending");
    let again = api
        .post(&format!("/v1/jobs/{id}/retry"), Some("r1"), &json!({}))
        .await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(
        again.body["attempt"]["id"],
        attempt.as_str(),
        "the same key starts nothing"
    );
    let blocked = api
        .post(&format!("/v1/jobs/{id}/retry"), Some("r2"), &json!({}))
        .await;
    assert_eq!(problem(&blocked, StatusCode::CONFLICT), "attempt_blocked");
    assert_eq!(blocked.body["details"]["attempt_id"], attempt.as_str());

    let resolved = api
        .post(
            &format!("/v1/attempts/{attempt}/resolve"),
            None,
            &json!({ "as": "abandoned", "note": "never sent" }),
        )
        .await;
    assert_eq!(resolved.status, StatusCode::OK, "{}", resolved.body);
    assert_eq!(resolved.body["attempt"]["state"], "abandoned");

    let cancelled = api
        .post(&format!("/v1/jobs/{id}/cancel"), None, &json!({}))
        .await;
    assert_eq!(cancelled.status, StatusCode::OK, "{}", cancelled.body);
    assert_eq!(cancelled.body["job"]["status"], "cancelled");
    let late = api
        .post(&format!("/v1/jobs/{id}/retry"), Some("r3"), &json!({}))
        .await;
    assert_eq!(problem(&late, StatusCode::CONFLICT), "invalid_transition");
}

#[tokio::test]
async fn a_bulk_resolve_under_its_key_settles_the_matching_jobs_once() {
    let api = InProcess::new().await;
    let mut stuck = Vec::new();
    for i in 0..3 {
        let id = job_id(&api.submit(&format!("stuck-{i}"), json!(i)).await);
        let claimed = api
            .engine
            .claim_attempt(&id, "primary")
            .await
            .expect("claim");
        let attempt = &claimed.attempt.id;
        api.engine
            .mark_sent(attempt, "executor-test", std::time::Duration::from_secs(60))
            .await
            .expect("sent");
        let why = AttemptError {
            kind: "soft_timeout".into(),
            message: "no answer within 1000 ms".into(),
        };
        api.engine
            .mark_unknown(attempt, why)
            .await
            .expect("unknown");
        stuck.push(id);
    }
    api.submit("queued", json!("q")).await;
    let request = json!({
        "action": "resolve",
        "as": "abandoned",
        "filter": { "error_kind": "soft_timeout" }
    });
    let started = api.post("/v1/bulk", Some("outage-1"), &request).await;
    assert!(started.status.is_success(), "{}", started.body);
    let op = started.body["bulk"]["id"]
        .as_str()
        .expect("an id")
        .to_owned();
    assert_eq!(started.body["bulk"]["matched"], 3, "{}", started.body);

    // The operation runs beside the request; its record says when it is done.
    let mut shown = api.get(&format!("/v1/bulk/{op}")).await;
    for _ in 0..100 {
        if shown.body["bulk"]["done"] == true {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        shown = api.get(&format!("/v1/bulk/{op}")).await;
    }
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.body);
    assert_eq!(shown.body["bulk"]["done"], true, "{}", shown.body);
    assert_eq!(shown.body["bulk"]["changed"], 3, "{}", shown.body);
    for id in &stuck {
        let job = api.get(&format!("/v1/jobs/{id}")).await;
        assert_eq!(job.body["job"]["status"], "queued", "{}", job.body);
    }
    let repeated = api.post("/v1/bulk", Some("outage-1"), &request).await;
    assert!(repeated.status.is_success(), "{}", repeated.body);
    assert_eq!(repeated.body["bulk"]["id"], op.as_str());
    assert_eq!(repeated.body["replayed"], true, "{}", repeated.body);
    assert_eq!(repeated.body["bulk"]["changed"], 3, "nothing changed twice");
}

/// `GET /v1/spend` sums what the owner's answered attempts cost, and only the owner's; a job
/// shows its own cost; a bad `by` is refused naming it.
#[tokio::test]
async fn spend_is_the_owners_own_and_a_job_shows_what_it_cost() {
    let app = InProcess::new().await;
    let priced = json!({
        "name": "priced", "kind": "sandbox", "soft_timeout_ms": 5000, "hard_timeout_ms": 10000,
        "honours_idempotency_key": true, "dials": {"latency_ms": 0, "jitter_ms": 0},
        "price": {"currency": "EUR", "per_request": "0.20"}
    });
    app.engine
        .add_provider(&priced.to_string())
        .await
        .expect("provider");
    let intent = json!({ "route": ["priced"], "input": {"n": 1} });
    let submitted = app.post("/v1/jobs", Some("spend-1"), &intent).await;
    let job_id = submitted.body["job"]["id"]
        .as_str()
        .expect("a job id")
        .to_owned();
    let executor = onejob_engine::executor::Executor::new(
        app.engine.clone(),
        onejob_engine::executor::ExecutorOptions::default(),
    )
    .expect("executor");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    executor
        .run_job(&job_id, Some(deadline))
        .await
        .expect("run");

    let one = json!({"currency": "EUR", "spent": "0.20", "at_risk": "0.00"});
    let job = app.get(&format!("/v1/jobs/{job_id}")).await;
    assert_eq!(job.status, StatusCode::OK, "{}", job.body);
    assert_eq!(job.body["cost"], json!([one]), "{}", job.body);
    assert_eq!(job.body["attempts"][0]["cost"], one);

    let spend = app.get("/v1/spend?by=provider").await;
    assert_eq!(spend.status, StatusCode::OK, "{}", spend.body);
    assert_eq!(
        spend.body,
        json!({
            "spend": [{"provider": "priced", "currency": "EUR", "spent": "0.20", "at_risk": "0.00"}],
            "total": one
        })
    );
    let bob = app.token_for("bob").await;
    let request = app.request(Method::GET, "/v1/spend", &bob);
    let theirs = app
        .send(request.body(Body::empty()).expect("a request"))
        .await;
    assert_eq!(
        theirs.body,
        json!({"spend": [], "total": null}),
        "alice's spend is hers"
    );

    let refused = app.get("/v1/spend?by=week").await;
    assert_eq!(problem(&refused, StatusCode::BAD_REQUEST), "invalid_input");
    assert_eq!(refused.body["details"]["field"], "by", "{}", refused.body);
}

/// `/v1/budgets` is the owner's own: set, listed with what it holds, never another owner's,
/// and removed.
#[tokio::test]
async fn budgets_are_the_owners_own() {
    let app = InProcess::new().await;
    let put = |token: &str, name: &str, body: Value| {
        app.request(Method::PUT, &format!("/v1/budgets/{name}"), token)
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body.to_string()))
            .expect("a request")
    };
    let daily = json!({"limit": "10.00", "currency": "USD", "period": "day"});
    let set = app.send(put(&app.token, "daily", daily.clone())).await;
    assert_eq!(set.status, StatusCode::OK, "{}", set.body);
    assert_eq!(set.body["budget"]["owner"], "alice", "{}", set.body);
    assert_eq!(set.body["budget"]["used"], "0.00");
    assert_eq!(set.body["replaced"], false);

    let bob = app.token_for("bob").await;
    let theirs = app.send(put(&bob, "daily", daily)).await;
    assert_eq!(problem(&theirs, StatusCode::NOT_FOUND), "not_found");
    let request = app.request(Method::GET, "/v1/budgets", &bob);
    let listed = app
        .send(request.body(Body::empty()).expect("a request"))
        .await;
    assert_eq!(
        listed.body,
        json!({"budgets": []}),
        "alice's budget is hers"
    );

    let other = json!({"limit": "1", "currency": "USD", "period": "month", "owner": "bob"});
    let refused = app.send(put(&app.token, "monthly", other)).await;
    assert_eq!(problem(&refused, StatusCode::BAD_REQUEST), "invalid_input");
    assert_eq!(
        refused.body["details"]["field"], "budget.owner",
        "{}",
        refused.body
    );

    let listed = app.get("/v1/budgets").await;
    assert_eq!(
        listed.body["budgets"][0]["name"], "daily",
        "{}",
        listed.body
    );
    let request = app.request(Method::DELETE, "/v1/budgets/daily", &app.token);
    let removed = app
        .send(request.body(Body::empty()).expect("a request"))
        .await;
    assert_eq!(removed.body, json!({"removed": "daily"}));
    assert_eq!(app.get("/v1/budgets").await.body, json!({"budgets": []}));
}
