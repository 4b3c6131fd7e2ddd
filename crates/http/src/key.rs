//! The `Idempotency-Key` header: the draft's quoted sf-string (`"order-45"`) or the bare key
//! (`order-45`) that many clients send; both name the same key.

use axum::http::HeaderMap;

use crate::problem::Problem;

/// The header's name.
pub const HEADER: &str = "idempotency-key";

/// The key the request names. A missing, empty or malformed header is `invalid_input` naming
/// `Idempotency-Key`; the engine checks the key itself (length, printable ASCII).
pub fn from_headers(headers: &HeaderMap) -> Result<String, Problem> {
    let field = "Idempotency-Key";
    let mut values = headers.get_all(HEADER).iter();
    let Some(value) = values.next() else {
        return Err(Problem::invalid(
            field,
            "the header is required: one key per intent, the same on every retry",
        ));
    };
    if values.next().is_some() {
        return Err(Problem::invalid(
            field,
            "the header is given more than once",
        ));
    }
    let Ok(text) = value.to_str() else {
        return Err(Problem::invalid(
            field,
            "only printable ASCII (0x20-0x7E) may appear in a key",
        ));
    };
    let key = match text.strip_prefix('"') {
        Some(quoted) => unquote(quoted).map_err(|why| Problem::invalid(field, why))?,
        None => text.to_owned(),
    };
    if key.is_empty() {
        return Err(Problem::invalid(field, "the key must not be empty"));
    }
    Ok(key)
}

/// An sf-string after its opening quote: `\"` and `\\` are the only escapes, and the closing
/// quote ends the value.
fn unquote(rest: &str) -> Result<String, String> {
    let mut key = String::with_capacity(rest.len());
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some((_, e @ ('"' | '\\'))) => key.push(e),
                Some((_, e)) => {
                    return Err(format!(
                        "\\{e} at byte {} is not an escape of a quoted key; only \\\" and \\\\ are",
                        i + 1
                    ))
                }
                None => return Err("the quoted key ends in a lone backslash".to_owned()),
            },
            '"' => {
                let after = &rest[i + 1..];
                if !after.is_empty() {
                    return Err(format!(
                        "text after the closing quote ({after:?}); a quoted key is one sf-string"
                    ));
                }
                return Ok(key);
            }
            c => key.push(c),
        }
    }
    Err("the quoted key has no closing quote".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn key(value: &str) -> Result<String, String> {
        let mut headers = HeaderMap::new();
        headers.insert(HEADER, HeaderValue::from_str(value).expect("header value"));
        from_headers(&headers).map_err(|p| p.detail)
    }

    #[test]
    fn the_quoted_and_the_bare_form_are_one_key() {
        assert_eq!(key("\"order-45\""), Ok("order-45".to_owned()));
        assert_eq!(key("order-45"), Ok("order-45".to_owned()));
        assert_eq!(key(r#""a \"b\" \\c""#), Ok(r#"a "b" \c"#.to_owned()));
        // A bare key may hold a quote anywhere but first.
        assert_eq!(key(r#"a"b"#), Ok(r#"a"b"#.to_owned()));
    }

    #[test]
    fn a_malformed_header_names_what_is_wrong() {
        for (value, says) in [
            ("\"open", "no closing quote"),
            ("\"a\"b", "after the closing quote"),
            ("\"a\\n\"", "not an escape"),
            ("\"\"", "must not be empty"),
        ] {
            let detail = key(value).expect_err(value);
            assert!(
                detail.contains("Idempotency-Key") && detail.contains(says),
                "{value}: {detail}"
            );
        }
        let detail = from_headers(&HeaderMap::new())
            .map_err(|p| p.detail)
            .expect_err("missing");
        assert!(detail.contains("required"), "{detail}");
    }
}
