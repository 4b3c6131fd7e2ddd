//! The OpenAPI 3.1 document of the API (SPEC §15): its schemas are derived from the engine's
//! own types and its operations from the handlers' annotations, so a changed type or route
//! changes the document; it is served at `GET /v1/openapi.json` and committed as
//! `docs/openapi.json`, where a test keeps the two the same.

use std::sync::LazyLock;

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Response};
use onejob_engine::error::EmptyDetails;
use onejob_engine::Error;
use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::path::Operation;
use utoipa::openapi::schema::{
    ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, SchemaType, Type,
};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{
    ContentBuilder, HeaderBuilder, OpenApi as Document, Ref, RefOr, ResponseBuilder,
};
use utoipa::{Modify, OpenApi, PartialSchema, ToResponse, ToSchema};

use crate::problem::{title, PROBLEM_JSON, TOO_MANY_REQUESTS};

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
        (name = "events", description = "Every change of the owner's jobs, as it commits (SPEC §10)"),
        (name = "meta", description = "This document"),
    ),
)]
struct ApiDoc;

/// The bearer scheme, and this document's own operation freed of it.
struct Security;

impl Modify for Security {
    fn modify(&self, doc: &mut Document) {
        let scheme = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some(
                "A token made by `onejob token create --owner ID`; the ledger keeps only its \
                 SHA-256, and the owner it names is the only owner a request acts as.",
            ))
            .build();
        doc.components
            .get_or_insert_with(Default::default)
            .add_security_scheme(BEARER, SecurityScheme::Http(scheme));
        if let Some(get) = doc
            .paths
            .paths
            .get_mut(DOCUMENT_PATH)
            .and_then(|item| item.get.as_mut())
        {
            // An empty list, not `[{}]`: no scheme applies at all.
            get.security = Some(Vec::new());
        }
    }
}

/// An optional body is left out, never sent as JSON `null` (which no handler takes): its
/// schema is the body's own, and `required` false says it may be missing.
struct OptionalBodies;

impl Modify for OptionalBodies {
    fn modify(&self, doc: &mut Document) {
        for item in doc.paths.paths.values_mut() {
            for operation in [&mut item.post, &mut item.put, &mut item.patch] {
                let Some(body) = operation.as_mut().and_then(|o| o.request_body.as_mut()) else {
                    continue;
                };
                for content in body.content.values_mut() {
                    let Some(RefOr::T(Schema::OneOf(either))) = &content.schema else {
                        continue;
                    };
                    let not_null: Vec<_> = either
                        .items
                        .iter()
                        .filter(|s| !is_null(s))
                        .cloned()
                        .collect();
                    if let [only] = &not_null[..] {
                        content.schema = Some(only.clone());
                    }
                }
            }
        }
    }
}

/// What the HTTP layer may answer to any operation before its handler runs: a head it cannot
/// read (400, 414, 431), a body announced over 1 MiB (413), a connection past the limit or a
/// ledger that cannot answer (503: every operation but this document's own reads the ledger,
/// where the token is checked).
struct HttpLayer;

impl Modify for HttpLayer {
    fn modify(&self, doc: &mut Document) {
        let answers = [
            ("400", BadRequest::response().0),
            ("413", PayloadTooLarge::response().0),
            ("414", UriTooLong::response().0),
            ("431", HeadersTooLarge::response().0),
            ("503", Unavailable::response().0),
        ];
        for item in doc.paths.paths.values_mut() {
            for operation in [
                &mut item.get,
                &mut item.post,
                &mut item.put,
                &mut item.patch,
                &mut item.delete,
            ]
            .into_iter()
            .flatten()
            {
                for (status, name) in answers {
                    operation
                        .responses
                        .responses
                        .entry(status.to_owned())
                        .or_insert_with(|| RefOr::Ref(Ref::from_response_name(name)));
                }
            }
        }
    }
}

/// Where an answer leads (OpenAPI links): a new job to its reading, cancel and retry, an
/// attempt to its resolution, a bulk operation to its progress, so a client or a tool can follow the ids the API hands out.
struct Links;

/// A link's name, the operation it leads to, and where the answer carries that operation's id.
type Link = (&'static str, &'static str, &'static str);

impl Modify for Links {
    fn modify(&self, doc: &mut Document) {
        const JOB: &str = "$response.body#/job/id";
        const TO_JOB: Link = ("GetJob", "get_job", JOB);
        // Each POST, the statuses whose answers lead on, and where.
        let leads: [(&str, &[&str], &[Link]); 4] = [
            (
                "/v1/jobs",
                &["200", "201"],
                &[
                    TO_JOB,
                    ("CancelJob", "cancel_job", JOB),
                    ("RetryJob", "retry_job", JOB),
                ],
            ),
            (
                "/v1/jobs/{id}/retry",
                &["200"],
                &[
                    TO_JOB,
                    (
                        "ResolveAttempt",
                        "resolve_attempt",
                        "$response.body#/attempt/id",
                    ),
                ],
            ),
            ("/v1/attempts/{id}/resolve", &["200"], &[TO_JOB]),
            (
                "/v1/bulk",
                &["200", "202"],
                &[("GetBulk", "get_bulk", "$response.body#/bulk/id")],
            ),
        ];
        for (path, statuses, links) in leads {
            let Some(operation) = doc
                .paths
                .paths
                .get_mut(path)
                .and_then(|item| item.post.as_mut())
            else {
                continue;
            };
            for status in statuses {
                let Some(RefOr::T(response)) = operation.responses.responses.get_mut(*status)
                else {
                    continue;
                };
                for (name, target, id) in links {
                    let link = LinkBuilder::new()
                        .operation_id(*target)
                        .parameter("id", *id)
                        .build();
                    response.links.insert((*name).to_owned(), RefOr::T(link));
                }
            }
        }
    }
}

fn is_null(schema: &RefOr<Schema>) -> bool {
    matches!(schema, RefOr::T(Schema::Object(o))
        if o.schema_type == SchemaType::Type(Type::Null))
}

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

/// The problem+json body (RFC 9457): one variant per code of the engine's error union, with
/// that code's `details`, so a new code or a changed detail reaches the document by itself.
pub struct Problem;

impl PartialSchema for Problem {
    fn schema() -> RefOr<Schema> {
        let codes = match <Error as PartialSchema>::schema() {
            RefOr::T(Schema::OneOf(union)) => union.items,
            other => vec![other],
        };
        let mut problem = OneOfBuilder::new().description(Some(
            "An error, as `application/problem+json` (RFC 9457): `type`, `title`, `status` and \
             `detail`, with the `code` of SPEC §11 and the `details` that code carries.",
        ));
        for code in codes {
            let RefOr::T(Schema::Object(error)) = code else {
                problem = problem.item(code);
                continue;
            };
            let name = code_name(&error).unwrap_or_default();
            let mut variant = variant_frame(&name, error.description.clone());
            for field in ["code", "details"] {
                if let Some(schema) = error.properties.get(field) {
                    variant = variant.property(field, schema.clone());
                }
            }
            for field in ["type", "title", "status", "detail", "code", "details"] {
                variant = variant.required(field);
            }
            problem = problem.item(variant);
        }
        problem = problem.item(
            variant_frame(
                TOO_MANY_REQUESTS,
                Some(
                    "More than there is room for: a token past its share of long requests \
                     (event streams, `?wait`), 429, or a connection past the server's limit, \
                     503. `Retry-After` says when to try again."
                        .to_owned(),
                ),
            )
            .property(
                "code",
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .enum_values(Some([TOO_MANY_REQUESTS])),
            )
            .property(
                "details",
                Ref::from_schema_name(<EmptyDetails as ToSchema>::name()),
            )
            .required("type")
            .required("title")
            .required("status")
            .required("detail")
            .required("code")
            .required("details"),
        );
        problem.into()
    }
}

/// The one code an error variant's schema allows.
fn code_name(variant: &utoipa::openapi::schema::Object) -> Option<String> {
    let code = serde_json::to_value(variant.properties.get("code")?).ok()?;
    code["enum"][0].as_str().map(str::to_owned)
}

/// The fields every problem has, `title` fixed to the code's.
fn variant_frame(code: &str, description: Option<String>) -> ObjectBuilder {
    let string = || ObjectBuilder::new().schema_type(Type::String);
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(description)
        .property(
            "type",
            string()
                .format(Some(SchemaFormat::Custom("uri".to_owned())))
                .description(Some("A tag URI naming the code")),
        )
        .property(
            "title",
            string()
                .enum_values(Some([title(code)]))
                .description(Some("The code's title, the same for every occurrence")),
        )
        .property(
            "status",
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .description(Some("The HTTP status of the answer")),
        )
        .property(
            "detail",
            string().description(Some("What went wrong, for a person to read")),
        )
}

/// One event of `GET /v1/events` as it arrives: its feed position as `id`, and as `data` one
/// JSON object of the `Event` schema.
pub struct StreamEvent;

impl PartialSchema for StreamEvent {
    fn schema() -> RefOr<Schema> {
        let string = || ObjectBuilder::new().schema_type(Type::String);
        ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(
                "One Server-Sent Event: `id` is its feed position, the value to send back as \
                 `Last-Event-ID`; `data` is one JSON object of the `Event` schema.",
            ))
            .property(
                "id",
                string().description(Some("The event's position in the owner's feed")),
            )
            .property(
                "data",
                string()
                    .content_media_type("application/json")
                    .description(Some("An `Event`, as JSON")),
            )
            .property(
                "event",
                string().description(Some("Unset: every event is a message")),
            )
            .required("id")
            .required("data")
            .into()
    }
}

impl ToSchema for StreamEvent {}

impl ToSchema for Problem {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        <Error as ToSchema>::schemas(schemas);
    }
}

/// A problem+json answer of the codes its description names.
fn problem(description: &str) -> RefOr<utoipa::openapi::Response> {
    problem_response(description).into()
}

/// A problem+json answer that carries a header too.
fn problem_with(description: &str, name: &str, says: &str) -> RefOr<utoipa::openapi::Response> {
    let header = HeaderBuilder::new()
        .schema(ObjectBuilder::new().schema_type(Type::String))
        .description(Some(says))
        .build();
    problem_response(description).header(name, header).into()
}

fn problem_response(description: &str) -> ResponseBuilder {
    ResponseBuilder::new().description(description).content(
        PROBLEM_JSON,
        ContentBuilder::new()
            .schema(Some(Ref::from_schema_name(Problem::name())))
            .build(),
    )
}

/// One reusable error answer, named after its status.
macro_rules! answer {
    ($name:ident, $make:expr) => {
        #[doc = concat!("The reusable `", stringify!($name), "` answer.")]
        pub struct $name;

        impl<'r> ToResponse<'r> for $name {
            fn response() -> (&'r str, RefOr<utoipa::openapi::Response>) {
                (stringify!($name), $make)
            }
        }
    };
}

answer!(
    BadRequest,
    problem(
        "`invalid_input`: a bad field, named in `details.field` (a header, a query parameter, \
         the body, or a field of it); malformed JSON names where it broke."
    )
);
answer!(
    Unauthorized,
    problem_with(
        "`unauthorized`: the token is missing, unknown or revoked; the answer is the same for \
         each.",
        "WWW-Authenticate",
        "`Bearer`",
    )
);
answer!(
    NotFound,
    problem(
        "`not_found`: no such job or attempt for this owner (another owner's is not found too)."
    )
);
answer!(
    Conflict,
    problem(
        "`attempt_blocked` (an open attempt exists), `invalid_transition` (the move is not \
         allowed from the current state) or `fallback_not_validated` (the provider has not \
         passed its contract check)."
    )
);
answer!(
    RequestTimeout,
    problem_with(
        "`invalid_input`: the body did not arrive whole within 10 s; the connection is closed.",
        "Connection",
        "`close`",
    )
);
answer!(
    PayloadTooLarge,
    problem("`invalid_input` naming `body`: the body is over 1 MiB; it was not read whole.")
);
answer!(
    UnsupportedMediaType,
    problem("`invalid_input`: the body is not `application/json`.")
);
answer!(
    IdempotencyConflict,
    problem(
        "`idempotency_conflict`: the key already names a job with another intent, named in \
         `details.existing_job_id`."
    )
);
answer!(
    TooManyRequests,
    problem_with(
        "`too_many_requests`: this token already holds its share of the server's connections in \
         long requests (event streams and waits), a quarter of them; end one, or try again later.",
        "Retry-After",
        "Seconds to wait before trying again",
    )
);
answer!(
    UriTooLong,
    problem("`invalid_input` naming `path`: the request's target is too long to read.")
);
answer!(
    HeadersTooLarge,
    problem(
        "`invalid_input` naming `headers`: more than 100 request headers, or too large to read; \
         the connection is closed."
    )
);
answer!(
    ServerError,
    problem("`provider` or `internal`: a failure that is not the request's, nor the ledger's.")
);
answer!(
    Unavailable,
    problem_with(
        "`storage`: the ledger is unreachable, busy, or failed a read or a write \
         (`details.kind` says which, `detail` names the ledger and what to check). Nothing was \
         decided: the same request (with its key) may succeed after `Retry-After`. Or \
         `too_many_requests`: the server holds as many connections as it serves at once \
         (`--max-connections`); answered at once, and the connection is closed.",
        "Retry-After",
        "Seconds to wait before sending the same request again",
    )
);

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
        has("GET", DOCUMENT_PATH, &["200"]);
        assert_eq!(described.len(), 10, "{described:?}");

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
