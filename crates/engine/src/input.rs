//! What every entry point checks in the text it is given before a ledger sees it: no NUL
//! anywhere (SPEC §11), and ids and cursors read as their canonical UUID text.
//!
//! PostgreSQL cannot hold NUL in text or JSON and SQLite can, so NUL is refused on both, as a
//! bad field, before any statement runs: a request that can never succeed is never told to
//! try again.

use serde_json::Value;

use crate::error::{Error, Result};

/// What a person reads when `field` holds NUL.
const NUL_WORDS: &str = "holds the NUL character (U+0000), which no text in a ledger may hold";

/// `invalid_input` naming `field` when `text` holds NUL (U+0000).
pub fn refuse_nul(field: &str, text: &str) -> Result<()> {
    if text.contains('\0') {
        return Err(Error::invalid_input(field, NUL_WORDS));
    }
    Ok(())
}

/// [`refuse_nul`] for an optional text.
pub fn refuse_nul_in(field: &str, text: Option<&str>) -> Result<()> {
    text.map_or(Ok(()), |text| refuse_nul(field, text))
}

/// `invalid_input` when any string or key inside `value` holds NUL: a string names its own
/// path (`intent.input.text`, `result.items.2`), a key the object that holds it.
pub fn refuse_nul_in_json(field: &str, value: &Value) -> Result<()> {
    // A stack, not recursion: the depth of what is checked here is limited elsewhere, or not
    // at all (a stored value read back).
    let mut todo: Vec<(String, &Value)> = vec![(field.to_owned(), value)];
    while let Some((path, value)) = todo.pop() {
        match value {
            Value::String(text) => refuse_nul(&path, text)?,
            Value::Array(items) => todo.extend(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| (format!("{path}.{i}"), item)),
            ),
            Value::Object(map) => {
                if let Some(key) = map.keys().find(|k| k.contains('\0')) {
                    return Err(Error::invalid_input(
                        &path,
                        format!("the key {key:?} {NUL_WORDS}"),
                    ));
                }
                todo.extend(map.iter().map(|(k, v)| (format!("{path}.{k}"), v)));
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    Ok(())
}

/// `text` as the canonical text of the UUID it is (lowercase, hyphenated), in any form the
/// UUID parser reads: upper or mixed case, `urn:uuid:…`, `{…}`, 32 hex digits without hyphens.
/// `None` when it is no UUID.
pub fn canonical_uuid(text: &str) -> Option<String> {
    uuid::Uuid::parse_str(text)
        .ok()
        .map(|id| id.hyphenated().to_string())
}

/// The id of a job, an attempt or a token as the ledger holds it (see [`canonical_uuid`]): NUL
/// is `invalid_input` naming `field`, and text that is no UUID names nothing (`not_found` for
/// `entity`), on both backends alike.
pub fn id(field: &str, entity: &str, text: &str) -> Result<String> {
    refuse_nul(field, text)?;
    canonical_uuid(text).ok_or_else(|| Error::not_found(entity, text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field_of(e: Error) -> String {
        match e {
            Error::InvalidInput { details, .. } => details.field,
            other => panic!("not invalid_input: {other:?}"),
        }
    }

    #[test]
    fn a_nul_is_named_by_the_path_of_its_string_or_the_object_of_its_key() {
        let value = json!({"a": [1, {"b": "x\u{0}"}]});
        let e = refuse_nul_in_json("intent.input", &value).expect_err("nul");
        assert_eq!(field_of(e), "intent.input.a.1.b");
        let value = json!({"a": {"k\u{0}": 1}});
        let e = refuse_nul_in_json("result", &value).expect_err("nul in a key");
        assert_eq!(field_of(e), "result.a");
        refuse_nul_in_json("result", &json!({"a": ["\u{1}", "é", null]})).expect("no nul");
    }

    #[test]
    fn every_form_of_a_uuid_reads_as_its_canonical_text() {
        let canonical = "0190f5a2-7b3c-7d4e-8f10-0123456789ab";
        for form in [
            canonical,
            "0190F5A2-7B3C-7D4E-8F10-0123456789AB",
            "urn:uuid:0190f5a2-7b3c-7d4e-8f10-0123456789ab",
            "{0190f5a2-7b3c-7d4e-8f10-0123456789ab}",
            "0190f5a27b3c7d4e8f100123456789ab",
        ] {
            assert_eq!(canonical_uuid(form).as_deref(), Some(canonical), "{form}");
        }
        assert_eq!(canonical_uuid("not-an-id"), None);
        assert_eq!(
            id("job_id", "job", "nope").expect_err("no id").code(),
            "not_found"
        );
        assert_eq!(
            id("job_id", "job", "\u{0}").expect_err("nul").code(),
            "invalid_input"
        );
    }
}
