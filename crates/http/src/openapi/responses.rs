//! The reusable error answers, one per status, each a problem+json body (see `Problem`) of
//! the codes its description names; and the sets of them that several operations share.

use std::collections::BTreeMap;

use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::{ContentBuilder, HeaderBuilder, Ref, RefOr, ResponseBuilder};
use utoipa::{IntoResponses, ToResponse, ToSchema};

use crate::problem::PROBLEM_JSON;

use super::schemas::Problem;

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

/// The reusable answer `R` under `status`, as an operation lists it: a reference by name.
fn at<'r, R: ToResponse<'r>>(status: &str) -> (String, RefOr<utoipa::openapi::Response>) {
    let name = R::response().0;
    (status.to_owned(), RefOr::Ref(Ref::from_response_name(name)))
}

/// The error answers of every operation behind a token: 400, 401 and 500.
pub struct CommonErrors;

impl IntoResponses for CommonErrors {
    fn responses() -> BTreeMap<String, RefOr<utoipa::openapi::Response>> {
        BTreeMap::from([
            at::<BadRequest>("400"),
            at::<Unauthorized>("401"),
            at::<ServerError>("500"),
        ])
    }
}

/// The error answers of an operation that reads a body: 408, 413 and 415.
pub struct BodyErrors;

impl IntoResponses for BodyErrors {
    fn responses() -> BTreeMap<String, RefOr<utoipa::openapi::Response>> {
        BTreeMap::from([
            at::<RequestTimeout>("408"),
            at::<PayloadTooLarge>("413"),
            at::<UnsupportedMediaType>("415"),
        ])
    }
}
