//! Query strings: a parameter that cannot be read (given twice, not text) is `invalid_input`
//! naming it, like every other bad field.

use axum::extract::{FromRequestParts, Query as Parsed};
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::problem::Problem;

/// The request's query string as `T`.
pub struct Query<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for Query<T> {
    type Rejection = Problem;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Query<T>, Problem> {
        match Parsed::<T>::from_request_parts(parts, state).await {
            Ok(Parsed(value)) => Ok(Query(value)),
            Err(rejection) => {
                let why = rejection.body_text();
                Err(Problem::invalid(
                    named(&why).unwrap_or("query"),
                    why.clone(),
                ))
            }
        }
    }
}

/// The parameter a deserializer's message names between backquotes (`duplicate field
/// \`limit\``).
fn named(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once('`')?;
    let (name, _) = rest.split_once('`')?;
    (!name.is_empty()).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::named;

    #[test]
    fn the_parameter_is_read_from_the_message() {
        assert_eq!(
            named("Failed to deserialize query string: duplicate field `limit`"),
            Some("limit")
        );
        assert_eq!(named("no name here"), None);
    }
}
