//! What is changed in the document once it is built from the types and the handlers'
//! annotations: the bearer scheme (and this document's own operation freed of it), optional
//! bodies, the answers of the HTTP layer, and the links from an answer to the operations its
//! ids lead to.

use utoipa::openapi::link::LinkBuilder;
use utoipa::openapi::schema::{Schema, SchemaType, Type};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{OpenApi as Document, Ref, RefOr};
use utoipa::{Modify, ToResponse};

use super::responses::{BadRequest, HeadersTooLarge, PayloadTooLarge, Unavailable, UriTooLong};
use super::{BEARER, DOCUMENT_PATH};

/// The bearer scheme, and this document's own operation freed of it.
pub(super) struct Security;

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
pub(super) struct OptionalBodies;

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
pub(super) struct HttpLayer;

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
pub(super) struct Links;

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
