//! Counting a rendered prompt's tokens with the provider's own tokenizer, for the context
//! window part of a contract check (SPEC §8).

use std::time::Duration;

use serde_json::{json, Value};
use tiktoken_rs::tokenizer::{get_tokenizer, Tokenizer as Encoding};

use crate::contracts::Prompt;
use crate::providers::url::redact_url;
use crate::providers::{ProviderConfig, ProviderKind, Tokenizer};

/// Chat formatting adds about this many tokens per message, and this many to prime the
/// answer (OpenAI's published rule for its chat models).
const PER_MESSAGE: u64 = 3;
const PRIMING: u64 = 3;

/// A prompt's size as counted, or why it was not.
#[derive(Debug, Clone, PartialEq)]
pub struct Count {
    /// `None`: not checked.
    pub tokens: Option<u64>,
    /// What counted it (`tiktoken o200k_base`, `llama_tokenize`), or why nothing did.
    pub by: String,
}

impl Count {
    fn not_checked(why: impl Into<String>) -> Count {
        Count {
            tokens: None,
            by: format!("not checked: {}", why.into()),
        }
    }
}

/// Counts the rendered prompt as the provider will see it: OpenAI's encodings for OpenAI
/// models (bundled, nothing is downloaded), a llama.cpp-style server's `/tokenize` where the
/// provider declares it, and "not checked" otherwise.
pub async fn count(
    client: &reqwest::Client,
    config: &ProviderConfig,
    base_url: &str,
    prompt: &Prompt,
) -> Count {
    let model = config.model.as_deref().unwrap_or("");
    match config.tokenizer {
        Some(Tokenizer::LlamaTokenize) => llama(client, config, base_url, prompt).await,
        Some(Tokenizer::Tiktoken) => {
            tiktoken(get_tokenizer(model).unwrap_or(Encoding::O200kBase), prompt)
        }
        None => match (config.kind, get_tokenizer(model)) {
            (ProviderKind::Openai, Some(encoding)) => tiktoken(encoding, prompt),
            _ => Count::not_checked(format!(
                "no tokenizer is known for model {model:?} at provider {}",
                config.name
            )),
        },
    }
}

fn tiktoken(encoding: Encoding, prompt: &Prompt) -> Count {
    let name = format!("tiktoken {}", encoding_name(encoding));
    match tiktoken_rs::bpe_for_tokenizer(encoding) {
        Ok(bpe) => {
            let mut tokens = PRIMING;
            for text in [&prompt.system, &prompt.user] {
                if !text.is_empty() {
                    tokens += PER_MESSAGE + bpe.encode_with_special_tokens(text).len() as u64;
                }
            }
            Count {
                tokens: Some(tokens),
                by: name,
            }
        }
        Err(e) => Count::not_checked(format!("{name} could not be loaded: {e}")),
    }
}

fn encoding_name(encoding: Encoding) -> &'static str {
    match encoding {
        Encoding::O200kHarmony => "o200k_harmony",
        Encoding::O200kBase => "o200k_base",
        Encoding::Cl100kBase => "cl100k_base",
        Encoding::P50kBase => "p50k_base",
        Encoding::R50kBase => "r50k_base",
        Encoding::P50kEdit => "p50k_edit",
        Encoding::Gpt2 => "gpt2",
    }
}

/// A llama.cpp server counts with its own vocabulary: `/apply-template` gives the prompt as
/// the model sees it (where offered), `/tokenize` its tokens. Both live at the server's root.
async fn llama(
    client: &reqwest::Client,
    config: &ProviderConfig,
    base_url: &str,
    prompt: &Prompt,
) -> Count {
    let root = base_url.trim_end_matches('/').trim_end_matches("/v1");
    let timeout = Duration::from_millis(config.hard_timeout_ms);
    let mut messages = Vec::new();
    if !prompt.system.is_empty() {
        messages.push(json!({ "role": "system", "content": prompt.system }));
    }
    messages.push(json!({ "role": "user", "content": prompt.user }));
    let templated = client
        .post(format!("{root}/apply-template"))
        .timeout(timeout)
        .json(&json!({ "messages": messages }))
        .send()
        .await
        .ok()
        .filter(|r| r.status().is_success());
    let text = match templated {
        Some(response) => response
            .json::<Value>()
            .await
            .ok()
            .and_then(|v| v.get("prompt").and_then(Value::as_str).map(str::to_owned)),
        None => None,
    }
    .unwrap_or_else(|| format!("{}\n{}", prompt.system, prompt.user));
    let tokenized = client
        .post(format!("{root}/tokenize"))
        .timeout(timeout)
        .json(&json!({ "content": text }))
        .send()
        .await;
    // Messages show the server without user info or query string, and reqwest's errors
    // without their URL.
    let shown = redact_url(&format!("{root}/tokenize"));
    let response = match tokenized {
        Ok(r) if r.status().is_success() => r,
        Ok(r) => return Count::not_checked(format!("{shown} answered {}", r.status())),
        Err(e) => return Count::not_checked(format!("{shown} failed: {}", e.without_url())),
    };
    match response.json::<Value>().await {
        Ok(body) => match body.get("tokens").and_then(Value::as_array) {
            Some(tokens) => Count {
                tokens: Some(tokens.len() as u64),
                by: "llama_tokenize".to_owned(),
            },
            None => Count::not_checked(format!("{shown} gave no tokens array")),
        },
        Err(e) => Count::not_checked(format!("{shown} gave no JSON: {}", e.without_url())),
    }
}
