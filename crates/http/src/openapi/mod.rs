//! The OpenAPI 3.1 document of the API (SPEC §15): its schemas are derived from the engine's
//! own types and its operations from the handlers' annotations, so a changed type or route
//! changes the document; it is served at `GET /v1/openapi.json` and committed as
//! `docs/openapi.json`, where a test keeps the two the same.
//!
//! - this file: the document's frame (its info, its operations, its components), the document
//!   as served and committed, and the route that serves it.
//! - `schemas.rs`: the schemas written by hand: the problem+json body, an event as it streams.
//! - `responses.rs`: the reusable error answers, one per status.
//! - `modifiers.rs`: what is changed in the document once it is built: the bearer scheme,
//!   optional bodies, the HTTP layer's answers, the links between operations.

mod modifiers;
mod responses;
mod schemas;

pub use responses::{
    BadRequest, BodyErrors, CommonErrors, Conflict, HeadersTooLarge, IdempotencyConflict, NotFound,
    PayloadTooLarge, RequestTimeout, ServerError, TooManyRequests, Unauthorized, Unavailable,
    UnsupportedMediaType, UriTooLong,
};
pub use schemas::{Problem, StreamEvent};

use std::sync::LazyLock;

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use utoipa::openapi::path::Operation;
use utoipa::openapi::OpenApi as Document;
use utoipa::OpenApi;

use modifiers::{HttpLayer, Links, OptionalBodies, Security};

/// The name of the bearer security scheme, as `security` in `ApiDoc` spells it.
const BEARER: &str = "bearer";
/// The path of this document, the one operation that needs no token.
const DOCUMENT_PATH: &str = "/v1/openapi.json";

/// The document: its frame here, its operations from the handlers, its schemas from the types.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "onejob HTTP API",
        version = env!("CARGO_PKG_VERSION"),
        description = "Exactly one result per intent, over HTTP (`onejob serve`). Every POST that \
creates a job carries an `Idempotency-Key`: the same key and intent name the same job, however \
often and to however many servers on one ledger it is sent, and it is sent to a provider once.\n\n\
Every request carries `Authorization: Bearer TOKEN` (a token from `onejob token create`), and \
the token alone names the owner; a missing, unknown or revoked token is 401. The one exception \
is `GET /v1/openapi.json`, this document, which needs no token.\n\n\
Errors are `application/problem+json` (RFC 9457) with the `code` and `details` of the engine's \
error union, and a `title` that is the same for every occurrence of a code. A body over 1 MiB is \
413 before it is read whole; a request that has not arrived whole, headers and body together, \
within 10 s is dropped. One token holds at most a quarter of the server's connections in long \
requests (event streams, `?wait`), 429 past that; a connection past the server's limit is \
answered 503 at once. A 2xx is sent only after the commit that holds its answer.",
        license(name = "MIT", identifier = "MIT"),
    ),
    servers((url = "http://127.0.0.1:8787", description = "`onejob serve` on its default address")),
    paths(
        crate::jobs::submit,
        crate::jobs::show,
        crate::jobs::list,
        crate::jobs::cancel,
        crate::jobs::retry,
        crate::jobs::resolve,
        crate::bulk::start,
        crate::bulk::show,
        crate::spend::show,
        crate::budgets::list,
        crate::budgets::set,
        crate::budgets::remove,
        crate::events::stream,
        serve,
    ),
    components(
        schemas(Problem, onejob_engine::Event),
        responses(
            BadRequest,
            Unauthorized,
            NotFound,
            Conflict,
            RequestTimeout,
            PayloadTooLarge,
            UnsupportedMediaType,
            IdempotencyConflict,
            TooManyRequests,
            UriTooLong,
            HeadersTooLarge,
            ServerError,
            Unavailable,
        ),
    ),
    modifiers(&Security, &OptionalBodies, &HttpLayer, &Links),
    security(("bearer" = [])),
    tags(
        (name = "jobs", description = "Jobs and their attempts (SPEC §2-§7)"),
        (name = "bulk", description = "A person's action on every job a filter matches (SPEC §16)"),
        (name = "spend", description = "What attempts cost, and the money at risk (SPEC §17)"),
        (name = "events", description = "Every change of the owner's jobs, as it commits (SPEC §10)"),
        (name = "meta", description = "This document"),
    ),
)]
struct ApiDoc;

/// The document, built from the types and annotations.
pub fn document() -> Document {
    ApiDoc::openapi()
}

/// The document as committed and served: pretty JSON, keys in a stable order, one final newline.
pub fn document_json() -> String {
    match document().to_pretty_json() {
        Ok(text) => {
            // utoipa 5.5 writes a link's `operationId` in snake case; OpenAPI reads camel case.
            let mut text = text.replace("\"operation_id\": ", "\"operationId\": ");
            text.push('\n');
            text
        }
        // Serialising plain maps and strings cannot fail; say so rather than serve half a document.
        Err(e) => format!("{{\"error\": \"the document could not be written: {e}\"}}\n"),
    }
}

static DOCUMENT: LazyLock<String> = LazyLock::new(document_json);

/// The OpenAPI 3.1 document of this API.
#[utoipa::path(
    get,
    path = "/v1/openapi.json",
    tag = "meta",
    operation_id = "get_openapi",
    summary = "This document",
    description = "The OpenAPI 3.1 description of every endpoint, generated from the server's own \
types. It needs no token.",
    responses((status = 200, description = "The document", content_type = "application/json",
        body = Object)),
)]
pub async fn serve() -> Response {
    let mut response = DOCUMENT.as_str().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Every operation of the document, with its method and path.
pub fn operations(doc: &Document) -> Vec<(&'static str, String, &Operation)> {
    let mut all = Vec::new();
    for (path, item) in &doc.paths.paths {
        for (method, operation) in [
            ("GET", &item.get),
            ("POST", &item.post),
            ("PUT", &item.put),
            ("PATCH", &item.patch),
            ("DELETE", &item.delete),
        ] {
            if let Some(operation) = operation {
                all.push((method, path.clone(), operation));
            }
        }
    }
    all
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use serde_json::Value;

    use super::*;
    use crate::problem::title;

    /// Set to rewrite `docs/openapi.json` instead of failing when it drifted.
    const WRITE: &str = "ONEJOB_WRITE_OPENAPI";

    fn committed_path() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json")
    }

    #[test]
    fn the_committed_openapi_document_is_current() {
        let current = document_json();
        assert_eq!(
            current,
            document_json(),
            "two builds of the document differ"
        );
        let path = committed_path();
        let committed = std::fs::read_to_string(&path).unwrap_or_default();
        if committed == current {
            return;
        }
        if std::env::var_os(WRITE).is_some() {
            std::fs::write(&path, &current).unwrap();
            return;
        }
        panic!(
            "docs/openapi.json is not the document the code describes: run \
             `{WRITE}=1 cargo test -p onejob-http --lib the_committed_openapi_document_is_current` \
             and commit it"
        );
    }

    fn json() -> Value {
        serde_json::from_str(&document_json()).unwrap()
    }

    #[test]
    fn the_document_is_openapi_3_1_with_bearer_tokens_except_for_itself() {
        let doc = json();
        assert!(
            doc["openapi"].as_str().unwrap().starts_with("3.1."),
            "{}",
            doc["openapi"]
        );
        assert_eq!(doc["security"], serde_json::json!([{ "bearer": [] }]));
        let scheme = &doc["components"]["securitySchemes"]["bearer"];
        assert_eq!(
            (scheme["type"].as_str(), scheme["scheme"].as_str()),
            (Some("http"), Some("bearer"))
        );
        assert_eq!(
            doc["paths"][DOCUMENT_PATH]["get"]["security"],
            serde_json::json!([])
        );
        for (method, path, operation) in operations(&document()) {
            if path != DOCUMENT_PATH {
                assert!(
                    operation.security.is_none(),
                    "{method} {path} drops the token"
                );
            }
        }
    }

    #[test]
    fn every_endpoint_of_the_spec_is_described_with_its_statuses() {
        let doc = document();
        let described: Vec<(String, String, Vec<String>)> = operations(&doc)
            .into_iter()
            .map(|(m, p, op)| {
                (
                    m.to_owned(),
                    p,
                    op.responses.responses.keys().cloned().collect(),
                )
            })
            .collect();
        let statuses = |method: &str, path: &str| -> Vec<String> {
            described
                .iter()
                .find(|(m, p, _)| m == method && p == path)
                .map(|(_, _, s)| s.clone())
                .unwrap_or_else(|| panic!("{method} {path} is not described"))
        };
        let has = |method: &str, path: &str, wanted: &[&str]| {
            let got = statuses(method, path);
            for status in wanted {
                assert!(
                    got.iter().any(|s| s == status),
                    "{method} {path}: no {status} in {got:?}"
                );
            }
        };
        has(
            "POST",
            "/v1/jobs",
            &[
                "201", "200", "400", "401", "413", "415", "422", "500", "503",
            ],
        );
        has("GET", "/v1/jobs", &["200", "400", "401", "500", "503"]);
        has(
            "GET",
            "/v1/jobs/{id}",
            &["200", "400", "401", "404", "500", "503"],
        );
        has(
            "POST",
            "/v1/jobs/{id}/cancel",
            &["200", "400", "401", "404", "409", "413", "500", "503"],
        );
        // Waits and streams are long requests, refused past a token's share.
        has("GET", "/v1/jobs/{id}", &["429"]);
        has("GET", "/v1/events", &["429"]);
        // What the HTTP layer answers before any handler, to every operation.
        for (method, path, _) in &described {
            has(method, path, &["400", "413", "414", "431", "503"]);
        }
        has(
            "POST",
            "/v1/jobs/{id}/retry",
            &[
                "200", "400", "401", "404", "409", "413", "415", "422", "500", "503",
            ],
        );
        has(
            "POST",
            "/v1/attempts/{id}/resolve",
            &[
                "200", "400", "401", "404", "409", "413", "415", "500", "503",
            ],
        );
        has(
            "POST",
            "/v1/bulk",
            &[
                "202", "200", "400", "401", "413", "415", "422", "500", "503",
            ],
        );
        has(
            "GET",
            "/v1/bulk/{id}",
            &["200", "400", "401", "404", "500", "503"],
        );
        has("GET", "/v1/events", &["200", "401", "503"]);
        has("GET", "/v1/spend", &["200", "400", "401", "500", "503"]);
        has("GET", "/v1/budgets", &["200", "400", "401", "500", "503"]);
        has(
            "PUT",
            "/v1/budgets/{name}",
            &["200", "400", "401", "404", "413", "415", "500"],
        );
        has(
            "DELETE",
            "/v1/budgets/{name}",
            &["200", "400", "401", "404", "500"],
        );
        has("GET", DOCUMENT_PATH, &["200"]);
        assert_eq!(described.len(), 14, "{described:?}");

        let doc = json();
        let submit = &doc["paths"]["/v1/jobs"]["post"];
        let key = submit["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "Idempotency-Key")
            .expect("POST /v1/jobs takes Idempotency-Key");
        assert_eq!(
            (key["in"].as_str(), key["required"].as_bool()),
            (Some("header"), Some(true))
        );
        assert!(submit["responses"]["201"]["headers"]["Location"].is_object());
        assert!(submit["responses"]["200"]["headers"]["Idempotent-Replayed"].is_object());
        let events = &doc["paths"]["/v1/events"]["get"];
        assert!(events["responses"]["200"]["content"]["text/event-stream"].is_object());
        assert!(events["parameters"][0]["name"] == "Last-Event-ID");
        assert!(
            doc["components"]["responses"]["Unavailable"]["headers"]["Retry-After"].is_object()
        );
        // A new job links to its reading, with the id the answer carries.
        let link = &submit["responses"]["201"]["links"]["GetJob"];
        assert_eq!(link["operationId"], "get_job", "{link}");
        assert_eq!(link["parameters"]["id"], "$response.body#/job/id", "{link}");
    }

    #[test]
    fn the_problem_schema_names_every_code_of_the_spec_and_its_details() {
        let doc = json();
        let variants = doc["components"]["schemas"]["Problem"]["oneOf"]
            .as_array()
            .unwrap();
        let code_of = |v: &Value| {
            v["properties"]["code"]["enum"][0]
                .as_str()
                .map(str::to_owned)
        };
        let codes: Vec<String> = variants.iter().filter_map(code_of).collect();
        for code in [
            "invalid_input",
            "idempotency_conflict",
            "attempt_blocked",
            "invalid_transition",
            "not_found",
            "fallback_not_validated",
            "unauthorized",
            "storage",
            "provider",
            "internal",
            "too_many_requests",
        ] {
            assert!(codes.iter().any(|c| c == code), "no {code} in {codes:?}");
        }
        // Each code's title is fixed, and is the one the server sends.
        for variant in variants {
            let code = code_of(variant).unwrap();
            assert_eq!(
                variant["properties"]["title"]["enum"],
                serde_json::json!([title(&code)]),
                "{code}"
            );
        }
        assert_eq!(codes.len(), variants.len(), "a variant without a code");
        let conflict = variants
            .iter()
            .find(|v| code_of(v).as_deref() == Some("idempotency_conflict"))
            .unwrap();
        assert_eq!(
            conflict["properties"]["details"]["$ref"],
            "#/components/schemas/ConflictDetails"
        );
        let details = &doc["components"]["schemas"]["ConflictDetails"]["properties"];
        assert!(details["existing_job_id"].is_object(), "{details}");
        for variant in variants {
            assert!(
                variant["properties"]["message"].is_null(),
                "problem+json says detail, not message"
            );
        }
    }

    #[test]
    fn any_json_is_any_json_and_the_enums_are_the_engines() {
        let doc = json();
        let schemas = &doc["components"]["schemas"];
        // The intent's input, a result and an event's detail may be any JSON at all.
        for (schema, field) in [("Job", "intent"), ("Intent", "input"), ("Event", "detail")] {
            let field = &schemas[schema]["properties"][field];
            assert!(
                field.get("type").is_none() && field.get("$ref").is_none(),
                "{schema}: {field}"
            );
        }
        let statuses: Vec<&str> = schemas["JobStatus"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        let engine: Vec<&str> = onejob_engine::JobStatus::ALL
            .iter()
            .map(|s| s.as_str())
            .collect();
        assert_eq!(statuses, engine);
        assert!(schemas["AttemptState"]["enum"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "unknown"));
        // The list's status filter is a status, or empty for none.
        let status = doc["paths"]["/v1/jobs"]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "status")
            .unwrap()["schema"]["pattern"]
            .as_str()
            .unwrap()
            .to_owned();
        assert_eq!(
            status,
            format!("^({})?$", engine.join("|")),
            "the status filter's pattern"
        );
        assert_eq!(
            schemas["Verdict"]["enum"],
            serde_json::json!(["succeeded", "failed", "abandoned"])
        );
    }
}
