//! Request bodies: read whole within the request's deadline and the size limit, then parsed
//! with the place where the JSON broke named.

use axum::body::Body;
use axum::extract::{FromRequest, Request};
use axum::http::{header, StatusCode};
use http_body_util::BodyExt;
use serde::de::DeserializeOwned;

use crate::problem::Problem;
use crate::{Api, ARRIVAL_DEADLINE, MAX_BODY};

/// When the request must have arrived whole: set by the connection when it began to read the
/// request's headers, so the body gets what the headers left of [`ARRIVAL_DEADLINE`].
#[derive(Debug, Clone, Copy)]
pub struct ArrivalDeadline(pub tokio::time::Instant);

/// The body as UTF-8 text, at most [`MAX_BODY`] bytes.
pub struct Text(pub String);

impl FromRequest<Api> for Text {
    type Rejection = Problem;

    async fn from_request(request: Request, _: &Api) -> Result<Text, Problem> {
        let json = request
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|v| {
                v.split(';')
                    .next()
                    .unwrap_or_default()
                    .trim()
                    .to_ascii_lowercase()
            });
        if let Some(kind) = json.filter(|k| k != "application/json" && !k.ends_with("+json")) {
            return Err(Problem::refused(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "Content-Type",
                format!("the body must be application/json, not {kind}"),
            ));
        }
        let deadline = request
            .extensions()
            .get::<ArrivalDeadline>()
            .map_or_else(|| tokio::time::Instant::now() + ARRIVAL_DEADLINE, |d| d.0);
        let bytes = read(request.into_body(), deadline).await?;
        String::from_utf8(bytes.to_vec())
            .map(Text)
            .map_err(|e| Problem::invalid("body", format!("not UTF-8 ({e})")))
    }
}

/// A JSON body of a known shape; an empty body is `{}`.
pub struct Json<T>(pub T);

impl<T: DeserializeOwned> FromRequest<Api> for Json<T> {
    type Rejection = Problem;

    async fn from_request(request: Request, api: &Api) -> Result<Json<T>, Problem> {
        let Text(text) = Text::from_request(request, api).await?;
        let text = if text.trim().is_empty() { "{}" } else { &text };
        serde_json::from_str(text)
            .map(Json)
            .map_err(|e| Problem::invalid("body", format!("not a valid request body ({e})")))
    }
}

/// The whole body by `deadline`; past the limit it is 413 as soon as the limit is crossed,
/// and nothing more is read.
async fn read(body: Body, deadline: tokio::time::Instant) -> Result<bytes::Bytes, Problem> {
    let Ok(collected) = tokio::time::timeout_at(deadline, body.collect()).await else {
        return Err(Problem::refused(
            StatusCode::REQUEST_TIMEOUT,
            "body",
            format!(
                "the request, headers and body, did not arrive whole within {} s; the \
                 connection is closed",
                ARRIVAL_DEADLINE.as_secs()
            ),
        ));
    };
    match collected {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) => {
            let too_large = std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>());
            if too_large {
                Err(Problem::refused(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "body",
                    format!("over the limit of {MAX_BODY} bytes"),
                ))
            } else {
                Err(Problem::invalid(
                    "body",
                    format!("could not be read whole ({e})"),
                ))
            }
        }
    }
}
