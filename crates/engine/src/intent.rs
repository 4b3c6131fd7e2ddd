//! Intents: validation of what a job asks for, and its fingerprint (SHA-256 of RFC 8785 JSON).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use specta::Type;

use crate::error::{Error, Result};

/// The largest serialized intent accepted, in bytes of its canonical JSON (SPEC §2).
pub const MAX_INTENT_BYTES: usize = 1024 * 1024;
/// The deepest JSON nesting accepted; the intent object itself is level 1 (SPEC §2).
pub(crate) const MAX_DEPTH: usize = 64;
/// The default number of attempts, all providers together (SPEC §7).
pub(crate) const DEFAULT_MAX_ATTEMPTS: u32 = 5;
/// The largest `max_attempts` an intent may ask for.
pub(crate) const MAX_MAX_ATTEMPTS: u32 = 100;
/// Numbers beyond this magnitude do not survive RFC 8785 exactly, so two different
/// intents could share a fingerprint; they are refused (send them as strings).
const MAX_EXACT_NUMBER: f64 = 9_007_199_254_740_991.0;

const FIELDS: [&str; 5] = ["route", "input", "contract", "params", "max_attempts"];

/// What a job asks for: where to send it, what to send, and how to judge the answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Intent {
    /// Provider names: the primary first, then the fallbacks.
    pub route: Vec<String>,
    /// The job's input, sent to the provider.
    pub input: Value,
    /// The output contract's name, if the answer must keep one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub contract: Option<String>,
    /// Provider parameters such as temperature and max_tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
    /// Attempts allowed, all providers together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
}

/// An intent that passed validation, with the forms the ledger stores.
#[derive(Debug, Clone)]
pub struct ValidIntent {
    pub intent: Intent,
    /// The intent as stored: compact JSON without absent or null optional fields.
    pub stored: String,
    /// Hex SHA-256 of the intent's RFC 8785 canonical JSON.
    pub fingerprint: String,
}

impl Intent {
    /// The attempt budget of this intent.
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS)
    }
}

/// Parses and validates an intent given as JSON text. Depth is checked on the raw text
/// before parsing, so no input can exhaust the stack.
pub fn parse_intent(text: &str) -> Result<ValidIntent> {
    check_depth(text, "intent")?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Error::invalid_input("intent", format!("not valid JSON ({e})")))?;
    validate_intent(value)
}

/// Validates an intent already parsed as JSON.
pub(crate) fn validate_intent(value: Value) -> Result<ValidIntent> {
    crate::input::refuse_nul_in_json("intent", &value)?;
    let Value::Object(mut fields) = value else {
        return Err(Error::invalid_input(
            "intent",
            format!("must be a JSON object, got {}", type_name(&value)),
        ));
    };
    if let Some(unknown) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(Error::invalid_input(
            format!("intent.{unknown}"),
            format!("unknown field; an intent has only {}", FIELDS.join(", ")),
        ));
    }
    // Absent and null optional fields are the same intent.
    fields.retain(|_, v| !v.is_null());
    let value = Value::Object(fields);
    if depth_of(&value) > MAX_DEPTH {
        return Err(Error::invalid_input(
            "intent",
            format!("nested deeper than {MAX_DEPTH} levels"),
        ));
    }
    check_numbers(&value, "intent")?;
    let intent = typed_intent(&value)?;
    let canonical = serde_json_canonicalizer::to_string(&value)
        .map_err(|e| Error::invalid_input("intent", format!("cannot be canonicalised ({e})")))?;
    if canonical.len() > MAX_INTENT_BYTES {
        return Err(Error::invalid_input(
            "intent",
            format!(
                "is {} bytes serialized; the limit is {MAX_INTENT_BYTES} bytes (1 MiB)",
                canonical.len()
            ),
        ));
    }
    let stored = serde_json::to_string(&value).map_err(|e| Error::internal(e.to_string()))?;
    Ok(ValidIntent {
        intent,
        stored,
        fingerprint: sha256_hex(canonical.as_bytes()),
    })
}

fn typed_intent(value: &Value) -> Result<Intent> {
    let route = match value.get("route") {
        None => return Err(Error::invalid_input("intent.route", "is required")),
        Some(Value::Array(items)) => items,
        Some(other) => {
            return Err(Error::invalid_input(
                "intent.route",
                format!(
                    "must be an array of provider names, got {}",
                    type_name(other)
                ),
            ))
        }
    };
    if route.is_empty() {
        return Err(Error::invalid_input(
            "intent.route",
            "must name at least one provider",
        ));
    }
    let mut names: Vec<String> = Vec::with_capacity(route.len());
    for (i, item) in route.iter().enumerate() {
        let field = format!("intent.route.{i}");
        let Value::String(name) = item else {
            return Err(Error::invalid_input(
                field,
                format!("must be a provider name, got {}", type_name(item)),
            ));
        };
        validate_name(&field, name)?;
        if names.contains(name) {
            return Err(Error::invalid_input(
                field,
                format!("names provider {name} twice; max_attempts sets how often it is tried"),
            ));
        }
        names.push(name.clone());
    }
    if value.get("input").is_none() {
        return Err(Error::invalid_input("intent.input", "is required"));
    }
    let contract = match value.get("contract") {
        None => None,
        Some(Value::String(name)) => {
            validate_name("intent.contract", name)?;
            Some(name.clone())
        }
        Some(other) => {
            return Err(Error::invalid_input(
                "intent.contract",
                format!("must be a contract name, got {}", type_name(other)),
            ))
        }
    };
    let params = match value.get("params") {
        None => None,
        Some(Value::Object(map)) => Some(map.clone()),
        Some(other) => {
            return Err(Error::invalid_input(
                "intent.params",
                format!("must be an object, got {}", type_name(other)),
            ))
        }
    };
    let max_attempts = match value.get("max_attempts") {
        None => None,
        Some(v) => match v.as_u64() {
            Some(n) if (1..=u64::from(MAX_MAX_ATTEMPTS)).contains(&n) => Some(n as u32),
            _ => {
                return Err(Error::invalid_input(
                    "intent.max_attempts",
                    format!("must be a whole number from 1 to {MAX_MAX_ATTEMPTS}, got {v}"),
                ))
            }
        },
    };
    Ok(Intent {
        route: names,
        input: value.get("input").cloned().unwrap_or(Value::Null),
        contract,
        params,
        max_attempts,
    })
}

/// Provider and contract names: 1–64 characters of `A-Za-z0-9._-`.
pub(crate) fn validate_name(field: &str, name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_input(
            field,
            format!("{name:?} is not a name: use 1-64 characters of A-Z a-z 0-9 . _ -"),
        ))
    }
}

/// Idempotency keys: 1–255 printable ASCII characters, 0x20–0x7E (SPEC §1).
pub(crate) fn validate_key(key: &str) -> Result<()> {
    let field = "idempotency_key";
    if key.is_empty() {
        return Err(Error::invalid_input(field, "must not be empty"));
    }
    if let Some((i, c)) = key.char_indices().find(|(_, c)| !(' '..='~').contains(c)) {
        return Err(Error::invalid_input(
            field,
            format!(
                "character {c:?} (U+{:04X}) at byte {i} is not printable ASCII (0x20-0x7E)",
                u32::from(c)
            ),
        ));
    }
    if key.len() > 255 {
        return Err(Error::invalid_input(
            field,
            format!("is {} characters; the limit is 255", key.len()),
        ));
    }
    Ok(())
}

/// Owner ids: 1–128 characters of `A-Za-z0-9._@-` (SPEC §1).
pub(crate) fn validate_owner(owner: &str) -> Result<()> {
    let ok = !owner.is_empty()
        && owner.len() <= 128
        && owner
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'@' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_input(
            "owner_id",
            format!(
                "{} is not an owner id: use 1-128 characters of A-Z a-z 0-9 . _ @ -",
                preview(owner)
            ),
        ))
    }
}

/// Refuses JSON text nested deeper than `MAX_DEPTH`, scanning without recursion.
pub fn check_depth(text: &str, field: &str) -> Result<()> {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err(Error::invalid_input(
                        field,
                        format!("nested deeper than {MAX_DEPTH} levels"),
                    ));
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

/// Hex SHA-256 of bytes.
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Hex SHA-256 of a JSON value's canonical (RFC 8785) form: equal JSON, equal hash.
pub(crate) fn canonical_sha256(value: &Value) -> String {
    match serde_json_canonicalizer::to_string(value) {
        Ok(text) => sha256_hex(text.as_bytes()),
        // Only non-finite numbers fail, and serde_json never holds one.
        Err(_) => sha256_hex(value.to_string().as_bytes()),
    }
}

fn depth_of(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth_of).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth_of).max().unwrap_or(0),
        _ => 0,
    }
}

fn check_numbers(value: &Value, path: &str) -> Result<()> {
    match value {
        Value::Number(n) => {
            let exact = n.as_f64().is_some_and(|f| f.abs() <= MAX_EXACT_NUMBER);
            if exact {
                Ok(())
            } else {
                Err(Error::invalid_input(
                    path,
                    format!("{n} is beyond ±(2^53-1) and cannot be fingerprinted exactly; send it as a string"),
                ))
            }
        }
        Value::Array(items) => items
            .iter()
            .enumerate()
            .try_for_each(|(i, v)| check_numbers(v, &format!("{path}.{i}"))),
        Value::Object(map) => map
            .iter()
            .try_for_each(|(k, v)| check_numbers(v, &format!("{path}.{k}"))),
        _ => Ok(()),
    }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn preview(text: &str) -> String {
    let short: String = text.chars().take(40).collect();
    if short.len() < text.len() {
        format!("{short:?}…")
    } else {
        format!("{short:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fp(text: &str) -> String {
        parse_intent(text).expect("valid intent").fingerprint
    }

    #[test]
    fn key_order_whitespace_and_number_form_do_not_change_the_fingerprint() {
        let a = fp(r#"{"route":["p"],"input":{"a":1,"b":2}}"#);
        let b = fp(r#"{ "input": {"b": 2, "a": 1}, "route": [ "p" ] }"#);
        let c = fp(r#"{"route":["p"],"input":{"a":1.0,"b":2e0}}"#);
        assert_eq!(a, b);
        assert_eq!(a, c);
    }

    #[test]
    fn null_and_absent_optional_fields_are_the_same_intent() {
        let a = fp(r#"{"route":["p"],"input":1}"#);
        let b = fp(r#"{"route":["p"],"input":1,"contract":null,"params":null}"#);
        assert_eq!(a, b);
        assert_ne!(a, fp(r#"{"route":["p"],"input":2}"#));
    }

    #[test]
    fn numbers_beyond_exact_range_are_refused_with_their_path() {
        let err = parse_intent(r#"{"route":["p"],"input":{"n":[1, 12345678901234567890]}}"#)
            .expect_err("too large");
        assert!(
            matches!(&err, Error::InvalidInput { details, .. } if details.field == "intent.input.n.1")
        );
    }

    #[test]
    fn depth_is_checked_on_raw_text_without_recursion() {
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        let err = check_depth(&deep, "intent").expect_err("too deep");
        assert_eq!(err.code(), "invalid_input");
        // Brackets inside strings do not count.
        check_depth(
            r#"{"a":"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\""}"#,
            "x",
        )
        .expect("brackets in strings");
    }

    #[test]
    fn keys_are_printable_ascii_up_to_255() {
        validate_key("a").expect("one char");
        validate_key(&"k".repeat(255)).expect("255 chars");
        validate_key(" ~").expect("edges of the range");
        assert!(validate_key("").is_err());
        assert!(validate_key(&"k".repeat(256)).is_err());
        assert!(validate_key("tab\there").is_err());
        assert!(validate_key("zażółć").is_err());
        assert!(validate_key("del\u{7f}").is_err());
    }

    #[test]
    fn owners_use_the_restricted_alphabet() {
        validate_owner("local").expect("plain");
        validate_owner("ann.b_c@d-e").expect("all punctuation");
        assert!(validate_owner("").is_err());
        assert!(validate_owner("a b").is_err());
        assert!(validate_owner(&"o".repeat(129)).is_err());
    }
}
