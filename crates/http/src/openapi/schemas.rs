//! The schemas written by hand: the problem+json body, one variant per code of the engine's
//! error union, and one event of the event stream as it arrives.

use onejob_engine::error::EmptyDetails;
use onejob_engine::Error;
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::problem::{title, TOO_MANY_REQUESTS};

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
