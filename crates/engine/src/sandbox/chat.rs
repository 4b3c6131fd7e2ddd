//! The sandbox's chat mode: answers in OpenAI's Chat Completions envelope, with content made to
//! fit the request's JSON schema, or broken the way a dial says.

use serde_json::{json, Map, Value};

/// How the content of a chat answer is broken, if at all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Break {
    None,
    ExtraKey,
    Prose,
    MissingRequiredKey,
    WrongType,
}

/// Schemas nested deeper than this are answered with `null` below it.
const MAX_DEPTH: usize = 32;

/// A chat completion answering `request` (the parsed body), with `request_id` as its id.
pub(super) fn completion(request: &Value, request_id: &str, broken: Break) -> Value {
    let schema = request
        .pointer("/response_format/json_schema/schema")
        .cloned()
        .unwrap_or_else(
            || json!({ "type": "object", "properties": { "answer": { "type": "string" } } }),
        );
    let mut answer = instance(&schema, 0);
    let content = match broken {
        Break::None => answer.to_string(),
        Break::ExtraKey => {
            if let Value::Object(fields) = &mut answer {
                fields.insert(
                    "unexpected".to_owned(),
                    json!("added by the sandbox's extra_key dial"),
                );
            }
            answer.to_string()
        }
        Break::Prose => format!("Sure! Here is what you asked for: {answer}. Anything else?"),
        Break::MissingRequiredKey => {
            let first_required = schema
                .get("required")
                .and_then(Value::as_array)
                .and_then(|r| r.first())
                .and_then(Value::as_str)
                .map(str::to_owned);
            if let Value::Object(fields) = &mut answer {
                let key = first_required.or_else(|| fields.keys().next().cloned());
                if let Some(key) = key {
                    fields.remove(&key);
                }
            }
            answer.to_string()
        }
        Break::WrongType => {
            if let Value::Object(fields) = &mut answer {
                if let Some((_, value)) = fields.iter_mut().next() {
                    *value = if value.is_string() {
                        json!(12345)
                    } else {
                        json!("sandbox")
                    };
                }
            }
            answer.to_string()
        }
    };
    let prompt_tokens = request
        .get("messages")
        .map(|m| m.to_string().len() / 4)
        .unwrap_or(0);
    let completion_tokens = content.len() / 4;
    json!({
        "id": format!("chatcmpl-{request_id}"),
        "object": "chat.completion",
        "created": chrono::Utc::now().timestamp(),
        "model": request.get("model").cloned().unwrap_or(json!("sandbox")),
        "choices": [{
            "index": 0,
            "message": { "role": "assistant", "content": content },
            "finish_reason": "stop"
        }],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens
        }
    })
}

/// A value that keeps `schema`: every property of an object, the first of an `enum`, the first
/// branch of `anyOf`/`oneOf`, and the least value of each type.
fn instance(schema: &Value, depth: usize) -> Value {
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    if let Some(value) = schema.get("const") {
        return value.clone();
    }
    if let Some(first) = schema
        .get("enum")
        .and_then(Value::as_array)
        .and_then(|e| e.first())
    {
        return first.clone();
    }
    for branch in ["anyOf", "oneOf", "allOf"] {
        if let Some(first) = schema
            .get(branch)
            .and_then(Value::as_array)
            .and_then(|b| b.first())
        {
            return instance(first, depth + 1);
        }
    }
    let kind = match schema.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(types)) => types
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if schema.get("properties").is_some() => "object",
        _ => "string",
    };
    let minimum = || schema.get("minimum").cloned().unwrap_or(json!(0));
    match kind {
        "object" => {
            let mut fields = Map::new();
            if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
                for (name, property) in properties {
                    fields.insert(name.clone(), instance(property, depth + 1));
                }
            }
            Value::Object(fields)
        }
        "array" => {
            let least = schema.get("minItems").and_then(Value::as_u64).unwrap_or(0);
            let item = schema.get("items").cloned().unwrap_or(json!({}));
            Value::Array(
                (0..least.min(16))
                    .map(|_| instance(&item, depth + 1))
                    .collect(),
            )
        }
        "integer" | "number" => minimum(),
        "boolean" => Value::Bool(true),
        "null" => Value::Null,
        _ => {
            let least = schema.get("minLength").and_then(Value::as_u64).unwrap_or(0);
            let text = "sandbox".to_owned();
            let pad = usize::try_from(least.min(4096)).unwrap_or(0);
            Value::String(format!("{text:x<pad$}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_made_up_answer_keeps_the_schema_shape() {
        let schema = json!({"type": "object", "properties": {
            "summary": {"type": "string"}, "words": {"type": "integer", "minimum": 1},
            "tone": {"enum": ["calm", "loud"]}, "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1}
        }, "required": ["summary", "words"]});
        assert_eq!(
            instance(&schema, 0),
            json!({"summary": "sandbox", "words": 1, "tone": "calm", "tags": ["sandbox"]})
        );
    }
}
