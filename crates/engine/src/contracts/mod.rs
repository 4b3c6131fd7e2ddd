//! Output contracts (SPEC §8): a JSON Schema the answer must keep, a prompt template filled
//! from the job's input, and sample inputs to check a provider with. A contract's hash covers
//! all three, so any change invalidates the checks made before it.

pub mod check;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::intent::{canonical_sha256, check_depth, validate_name};
use crate::model::AttemptError;

/// The fields a contract may have; any other is refused, so a typo cannot pass unnoticed.
const FIELDS: [&str; 4] = ["name", "schema", "template", "samples"];
/// The largest contract accepted, in bytes of its JSON text.
pub(crate) const MAX_CONTRACT_BYTES: usize = 1024 * 1024;

/// The prompt: a system text and a user text, each with `{{field}}` variables taken from the
/// job's input (`{{a.b}}` reaches into nested objects).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Template {
    #[serde(default)]
    pub system: String,
    pub user: String,
}

/// A template filled in with one input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    pub system: String,
    pub user: String,
}

/// A stored contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contract {
    pub name: String,
    /// The schema as given; `Contract::effective_schema` is what answers are held to.
    pub schema: Value,
    pub template: Template,
    pub samples: Vec<Value>,
    /// Hex SHA-256 of the canonical JSON of schema, template and samples.
    pub hash: String,
    pub created_at: String,
    /// When the hash last changed.
    pub updated_at: String,
}

/// A contract that passed validation, ready to store.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct NewContract {
    pub name: String,
    pub schema: Value,
    pub template: Template,
    pub samples: Vec<Value>,
    pub hash: String,
}

/// Parses and validates a contract given as JSON text: a name, a schema that compiles (with
/// no `$ref` outside itself), a template with a user text, and at least one sample input that
/// fills every variable of the template.
pub(crate) fn parse(text: &str) -> Result<NewContract> {
    if text.len() > MAX_CONTRACT_BYTES {
        return Err(Error::invalid_input(
            "contract",
            format!("is {} bytes; the limit is {MAX_CONTRACT_BYTES}", text.len()),
        ));
    }
    check_depth(text, "contract")?;
    let value: Value = serde_json::from_str(text)
        .map_err(|e| Error::invalid_input("contract", format!("not valid JSON ({e})")))?;
    crate::input::refuse_nul_in_json("contract", &value)?;
    let Value::Object(fields) = value else {
        return Err(Error::invalid_input("contract", "must be a JSON object"));
    };
    if let Some(unknown) = fields.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(Error::invalid_input(
            format!("contract.{unknown}"),
            format!("unknown field; a contract has only {}", FIELDS.join(", ")),
        ));
    }
    let name = match fields.get("name") {
        Some(Value::String(name)) => name.clone(),
        _ => {
            return Err(Error::invalid_input(
                "contract.name",
                "is required, a string",
            ))
        }
    };
    validate_name("contract.name", &name)?;
    let schema = match fields.get("schema") {
        Some(schema @ Value::Object(_)) => schema.clone(),
        _ => {
            return Err(Error::invalid_input(
                "contract.schema",
                "is required, a JSON Schema object",
            ))
        }
    };
    validator(&effective(&schema))
        .map_err(|e| Error::invalid_input("contract.schema", e.to_string()))?;
    let template: Template = match fields.get("template") {
        Some(t @ Value::Object(_)) => serde_json::from_value(t.clone()).map_err(|e| {
            Error::invalid_input(
                "contract.template",
                format!("must be {{\"system\": text, \"user\": text}} ({e})"),
            )
        })?,
        _ => {
            return Err(Error::invalid_input(
                "contract.template",
                "is required: {\"system\": text, \"user\": text}",
            ))
        }
    };
    if template.user.trim().is_empty() {
        return Err(Error::invalid_input(
            "contract.template.user",
            "must not be empty",
        ));
    }
    let samples = match fields.get("samples") {
        Some(Value::Array(samples)) if !samples.is_empty() => samples.clone(),
        _ => {
            return Err(Error::invalid_input(
                "contract.samples",
                "is required: an array of at least one sample input",
            ))
        }
    };
    for (i, sample) in samples.iter().enumerate() {
        render(&template, sample)
            .map_err(|why| Error::invalid_input(format!("contract.samples.{i}"), why))?;
    }
    let hash = content_hash(&schema, &template, &samples);
    Ok(NewContract {
        name,
        schema,
        template,
        samples,
        hash,
    })
}

/// The hash that ties checks to a contract's content: equal content, equal hash.
pub(crate) fn content_hash(schema: &Value, template: &Template, samples: &[Value]) -> String {
    canonical_sha256(&json!({
        "schema": schema,
        "template": { "system": template.system, "user": template.user },
        "samples": samples,
    }))
}

impl Contract {
    /// The schema answers are held to: the contract's own, with top-level
    /// `additionalProperties: false` unless it says otherwise.
    pub(crate) fn effective_schema(&self) -> Value {
        effective(&self.schema)
    }

    /// The prompt for one input; an input that lacks a variable is an error naming it.
    pub(crate) fn render(&self, input: &Value) -> std::result::Result<Prompt, String> {
        render(&self.template, input)
    }

    /// Holds a model's message text to the contract: it must be JSON (prose is a violation)
    /// and keep the schema. Returns the parsed answer.
    pub(crate) fn judge_text(&self, text: &str) -> std::result::Result<Value, AttemptError> {
        let value: Value = serde_json::from_str(text.trim()).map_err(|e| {
            violation(format!(
                "the answer is not JSON ({e}); it begins {:?}",
                preview(text)
            ))
        })?;
        self.judge(&value)?;
        Ok(value)
    }

    /// Holds a JSON answer to the effective schema; a violation names the offending path.
    pub(crate) fn judge(&self, answer: &Value) -> std::result::Result<(), AttemptError> {
        let validator = validator(&self.effective_schema())
            .map_err(|e| violation(format!("the contract's schema does not compile: {e}")))?;
        let Some(first) = validator.iter_errors(answer).next() else {
            return Ok(());
        };
        let mut path = first.instance_path().as_str().to_owned();
        match first.kind() {
            jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } => {
                if let Some(key) = unexpected.first() {
                    path = format!("{path}/{}", escape_pointer(key));
                }
            }
            jsonschema::error::ValidationErrorKind::Required { property } => {
                if let Some(key) = property.as_str() {
                    path = format!("{path}/{}", escape_pointer(key));
                }
            }
            _ => {}
        }
        let shown = if path.is_empty() { "/" } else { path.as_str() };
        Err(violation(format!("at {shown}: {first}")))
    }
}

fn violation(message: String) -> AttemptError {
    AttemptError {
        kind: "contract_violation".to_owned(),
        message,
    }
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn effective(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Value::Object(fields) = &mut schema {
        fields
            .entry("additionalProperties")
            .or_insert(Value::Bool(false));
    }
    schema
}

/// Refuses every external `$ref`: contracts are checked offline, and a schema must not make
/// the engine fetch anything.
struct NoFetch;

impl jsonschema::Retrieve for NoFetch {
    fn retrieve(
        &self,
        uri: &jsonschema::Uri<String>,
    ) -> std::result::Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("{uri} is outside the schema; onejob never fetches a $ref").into())
    }
}

fn validator(schema: &Value) -> std::result::Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_retriever(NoFetch)
        .build(schema)
        .map_err(|e| e.to_string())
}

/// Fills `{{field}}` (or `{{ a.b }}`) from the input: strings as they are, other values as
/// compact JSON.
fn render(template: &Template, input: &Value) -> std::result::Result<Prompt, String> {
    Ok(Prompt {
        system: fill(&template.system, input)?,
        user: fill(&template.user, input)?,
    })
}

fn fill(text: &str, input: &Value) -> std::result::Result<String, String> {
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text)? {
        match piece {
            Piece::Text(literal) => out.push_str(literal),
            Piece::Variable(path) => match lookup(input, path)
                .ok_or_else(|| format!("the input has no field {path:?} that the template uses"))?
            {
                Value::String(s) => out.push_str(s),
                other => out.push_str(&other.to_string()),
            },
        }
    }
    Ok(out)
}

/// A run of a template text: literal text, or a `{{ path }}` variable (trimmed).
enum Piece<'a> {
    Text(&'a str),
    Variable(&'a str),
}

/// A template text cut into its literal runs and variables, in order; an unclosed `{{` is
/// an error naming where it starts.
fn pieces(text: &str) -> std::result::Result<Vec<Piece<'_>>, String> {
    let mut pieces = Vec::new();
    let mut rest = text;
    while let Some(start) = rest.find("{{") {
        pieces.push(Piece::Text(&rest[..start]));
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            return Err(format!(
                "the template has an unclosed {{{{ at {:?}",
                preview(&rest[start..])
            ));
        };
        pieces.push(Piece::Variable(after[..end].trim()));
        rest = &after[end + 2..];
    }
    pieces.push(Piece::Text(rest));
    Ok(pieces)
}

impl Template {
    /// The input fields the template uses (`{{ a.b }}` is `a.b`), system text first, each
    /// once, in order of use: what a job under this contract must have in its input.
    pub fn fields(&self) -> Vec<String> {
        let mut fields: Vec<String> = Vec::new();
        for text in [&self.system, &self.user] {
            // A stored template always parses: its samples were rendered with it.
            for piece in pieces(text).unwrap_or_default() {
                if let Piece::Variable(path) = piece {
                    if !path.is_empty() && !fields.iter().any(|f| f == path) {
                        fields.push(path.to_owned());
                    }
                }
            }
        }
        fields
    }
}

fn lookup<'a>(input: &'a Value, path: &str) -> Option<&'a Value> {
    if path.is_empty() {
        return None;
    }
    path.split('.').try_fold(input, |value, key| match value {
        Value::Object(map) => map.get(key),
        Value::Array(items) => key.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

fn preview(text: &str) -> String {
    text.chars().take(60).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_templates_fields_are_trimmed_each_once_system_text_first() {
        let template = Template {
            system: "You answer in {{ lang }}.".into(),
            user: "{{text}} ({{ meta.source }}, {{lang}}, {{text}})".into(),
        };
        assert_eq!(template.fields(), ["lang", "text", "meta.source"]);
        let plain = Template {
            system: String::new(),
            user: "no variables".into(),
        };
        assert!(plain.fields().is_empty());
    }

    fn contract() -> Contract {
        let new = parse(
            &json!({
                "name": "summary",
                "schema": {"type": "object", "properties": {"summary": {"type": "string"}, "words": {"type": "integer"}}, "required": ["summary", "words"]},
                "template": {"system": "You summarise.", "user": "Summarise: {{text}} ({{meta.lang}})"},
                "samples": [{"text": "hello", "meta": {"lang": "en"}}]
            })
            .to_string(),
        )
        .expect("valid contract");
        Contract {
            name: new.name,
            schema: new.schema,
            template: new.template,
            samples: new.samples,
            hash: new.hash,
            created_at: String::new(),
            updated_at: String::new(),
        }
    }

    #[test]
    fn templates_fill_variables_and_name_missing_ones() {
        let c = contract();
        let prompt = c
            .render(&json!({"text": "hi", "meta": {"lang": "pl"}}))
            .expect("renders");
        assert_eq!(prompt.user, "Summarise: hi (pl)");
        let missing = c.render(&json!({"text": "hi"})).expect_err("no meta");
        assert!(missing.contains("meta.lang"), "{missing}");
    }

    #[test]
    fn prose_extra_missing_and_wrong_type_are_violations_with_paths() {
        let c = contract();
        c.judge_text(r#"{"summary": "s", "words": 1}"#)
            .expect("valid");
        let cases = [
            ("Sure! Here is the summary.", "not JSON"),
            (r#"{"summary": "s", "words": 1, "extra": 1}"#, "/extra"),
            (r#"{"summary": "s"}"#, "/words"),
            (r#"{"summary": "s", "words": "one"}"#, "/words"),
        ];
        for (text, expected) in cases {
            let error = c.judge_text(text).expect_err(text);
            assert_eq!(error.kind, "contract_violation");
            assert!(error.message.contains(expected), "{}", error.message);
        }
    }

    #[test]
    fn a_contract_may_allow_extra_keys_and_never_fetches_a_ref() {
        let open = json!({"name": "o", "schema": {"type": "object", "additionalProperties": true},
                          "template": {"user": "x"}, "samples": [{}]});
        parse(&open.to_string()).expect("open contract");
        let remote = json!({"name": "r", "schema": {"$ref": "https://example.com/s.json"},
                            "template": {"user": "x"}, "samples": [{}]});
        let err = parse(&remote.to_string()).expect_err("remote ref");
        assert!(
            matches!(&err, Error::InvalidInput { details, .. } if details.field == "contract.schema"),
            "{err:?}"
        );
    }

    #[test]
    fn the_hash_changes_with_schema_template_or_samples() {
        let c = contract();
        let mut t = c.template.clone();
        t.user.push('!');
        assert_ne!(c.hash, content_hash(&c.schema, &t, &c.samples));
        assert_ne!(c.hash, content_hash(&json!({}), &c.template, &c.samples));
        assert_eq!(c.hash, content_hash(&c.schema, &c.template, &c.samples));
    }
}
