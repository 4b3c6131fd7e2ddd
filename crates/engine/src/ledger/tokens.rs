//! API tokens of the HTTP API (SPEC §15): made, listed, revoked, and turned into an owner.
//!
//! A token is 256 random bits shown once; the ledger keeps only its SHA-256, so reading the
//! ledger lets no one in. Authenticating is a read by that hash; its last use is written at
//! most once a minute per token, so requests do not queue behind the ledger's writes.

use std::time::Duration;

use rand::RngCore;
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::intent::validate_owner;
use crate::model::TokenInfo;
use crate::store::tokens as token_rows;
use crate::Engine;

use super::finish;

/// What every token starts with, so one found in a log or a paste is recognisable as ours.
pub const TOKEN_PREFIX: &str = "oj_";
/// How stale a token's recorded last use may be before a use writes it again.
pub const LAST_USED_EVERY: Duration = Duration::from_secs(60);
/// The longest name a token may carry.
pub const MAX_TOKEN_NAME: usize = 128;

impl Engine {
    /// Makes a token for `owner`, with an optional name; returns the token, which is never
    /// stored or shown again, and what `tokens` will list for it.
    pub async fn create_token(
        &self,
        owner: &str,
        name: Option<&str>,
    ) -> Result<(String, TokenInfo)> {
        validate_owner(owner)?;
        if let Some(name) = name {
            validate_token_name(name)?;
        }
        let token = new_token();
        let id = uuid::Uuid::now_v7().to_string();
        let mut tx = self.begin().await?;
        let outcome = token_rows::insert(&mut tx, &id, owner, name, &digest(&token)).await;
        let created_at = finish(tx, outcome.map_err(Error::from)).await?;
        let info = TokenInfo {
            id,
            owner_id: owner.to_owned(),
            name: name.map(str::to_owned),
            created_at,
            last_used_at: None,
            revoked_at: None,
        };
        Ok((token, info))
    }

    /// Every token of every owner, oldest first; never a token itself.
    pub async fn tokens(&self) -> Result<Vec<TokenInfo>> {
        let mut conn = self.read().await?;
        Ok(token_rows::list(&mut conn).await?)
    }

    /// Revokes a token for good; revoking it again keeps the first time. `not_found` for an
    /// unknown id.
    pub async fn revoke_token(&self, id: &str) -> Result<TokenInfo> {
        let id = &crate::input::id("token_id", "token", id)?;
        let mut tx = self.begin().await?;
        let outcome = match token_rows::revoke(&mut tx, id).await {
            Ok(revoked) => revoked.ok_or_else(|| Error::not_found("token", id)),
            Err(e) => Err(e.into()),
        };
        finish(tx, outcome).await
    }

    /// The owner a token acts as. A token that is unknown, revoked or malformed is
    /// `unauthorized`, the same answer for each.
    pub async fn authenticate(&self, token: &str) -> Result<String> {
        let hash = digest(token);
        let found = {
            let mut conn = self.read().await?;
            token_rows::by_hash(&mut conn, &hash, LAST_USED_EVERY).await?
        };
        let Some(found) = found.filter(|t| !t.revoked) else {
            return Err(Error::unauthorized());
        };
        if found.stale {
            self.record_use(&found.id).await;
        }
        Ok(found.owner_id)
    }

    /// Records a token's use. Best effort: last use is a hint for a person, and a ledger that
    /// cannot take this write must not lock its owner out of reading.
    async fn record_use(&self, id: &str) {
        if let Ok(mut writer) = self.db.write().await {
            let _ = token_rows::touch(&mut writer, id, LAST_USED_EVERY).await;
        }
    }
}

/// A new token: the prefix and 256 bits from the operating system's generator, in hex.
fn new_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    format!("{TOKEN_PREFIX}{}", hex::encode(bytes))
}

/// The hex SHA-256 the ledger keeps in a token's place.
fn digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

/// A token's name: 1–128 characters, none of them a control character.
fn validate_token_name(name: &str) -> Result<()> {
    let count = name.chars().count();
    if name.trim().is_empty() || count > MAX_TOKEN_NAME {
        return Err(Error::invalid_input(
            "name",
            format!("is {count} characters; give 1-{MAX_TOKEN_NAME}, not only spaces"),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(Error::invalid_input(
            "name",
            "holds a control character; use printable text",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_prefixed_hex_of_256_bits_and_differ() {
        let (a, b) = (new_token(), new_token());
        assert_ne!(a, b);
        let hex_part = a.strip_prefix(TOKEN_PREFIX).expect("prefix");
        assert_eq!(hex_part.len(), 64);
        assert!(hex_part.bytes().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn names_are_short_printable_text() {
        assert!(validate_token_name("deploy bot").is_ok());
        assert!(validate_token_name("").is_err());
        assert!(validate_token_name("   ").is_err());
        assert!(validate_token_name("a\nb").is_err());
        assert!(validate_token_name(&"n".repeat(129)).is_err());
    }
}
