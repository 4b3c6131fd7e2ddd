//! API tokens in the ledger (SPEC §15): the ledger holds only their hashes, each names its own
//! owner, and an unknown or revoked token is refused with the one answer that reveals nothing.

use crate::common;

use common::{Ledger, Sql};
use onejob_engine::testing::TOKEN_PREFIX;
use onejob_engine::{Error, TokenInfo};

/// A new token of `owner`, without a name, and what the list says of it.
async fn new_token(ledger: &Ledger, owner: &str) -> (String, TokenInfo) {
    ledger
        .engine
        .create_token(owner, None)
        .await
        .unwrap_or_else(|e| panic!("a token of {owner}: {e:?}"))
}

/// Every column of every table of the ledger as text, one string.
async fn whole_ledger_as_text(ledger: &Ledger) -> String {
    let raw = ledger.raw().await;
    let (columns,): (String,) = raw
        .fetch_one(
            Sql {
                sqlite: "SELECT group_concat(m.name || '.' || c.name, ',')
                         FROM sqlite_master AS m, pragma_table_info(m.name) AS c
                         WHERE m.type = 'table'",
                postgres: "SELECT string_agg(table_name || '.' || column_name, ',')
                           FROM information_schema.columns WHERE table_schema = current_schema()",
            },
            &[],
        )
        .await
        .expect("the ledger's columns");
    let mut text = String::new();
    for qualified in columns.split(',') {
        let (table, column) = qualified.split_once('.').expect("table.column");
        let sql = format!(
            // A blob as hex, so raw bytes of the token would be seen too.
            "SELECT coalesce(group_concat(CASE typeof(\"{column}\") WHEN 'blob' THEN hex(\"{column}\")
             ELSE CAST(\"{column}\" AS TEXT) END, '|'), '') FROM \"{table}\""
        );
        // bytea reads as its hex, so raw bytes of the token would be seen too.
        let pg = format!(
            "SELECT coalesce(string_agg(CAST(\"{column}\" AS TEXT), '|'), '') FROM \"{table}\""
        );
        let (values,): (String,) = raw
            .fetch_one(
                Sql {
                    sqlite: &sql,
                    postgres: &pg,
                },
                &[],
            )
            .await
            .unwrap_or_else(|e| panic!("{table}.{column}: {e}"));
        text.push_str(&values);
        text.push('\n');
    }
    raw.close().await;
    text
}

fn is_unauthorized(result: Result<String, Error>) -> Error {
    match result {
        Err(e @ Error::Unauthorized { .. }) => e,
        other => panic!("expected unauthorized, got {other:?}"),
    }
}

#[tokio::test]
async fn the_ledger_never_holds_the_token() {
    let ledger = Ledger::new().await;
    let (token, info) = ledger
        .engine
        .create_token("alice", Some("deploy"))
        .await
        .expect("create");
    assert!(token.starts_with(TOKEN_PREFIX), "{token}");
    // 256 random bits: 64 hex digits after the prefix.
    assert_eq!(token.len(), TOKEN_PREFIX.len() + 64, "{token}");
    ledger
        .engine
        .authenticate(&token)
        .await
        .expect("authenticated");

    let dump = whole_ledger_as_text(&ledger).await;
    assert!(
        dump.contains(&info.id),
        "the dump reads the tokens table: {dump}"
    );
    let secret = &token[TOKEN_PREFIX.len()..];
    // No 12-character piece of the token's random part appears anywhere.
    for piece in secret.as_bytes().windows(12) {
        let piece = std::str::from_utf8(piece).expect("hex");
        assert!(
            !dump.to_lowercase().contains(piece),
            "the ledger holds part of the token: {piece}"
        );
    }
}

#[tokio::test]
async fn two_owners_tokens_authenticate_to_their_own_owners() {
    let ledger = Ledger::new().await;
    let (alice, _) = new_token(&ledger, "alice").await;
    let (bob, _) = new_token(&ledger, "bob@example.org").await;
    assert_ne!(alice, bob);
    assert_eq!(
        ledger.engine.authenticate(&alice).await.expect("alice"),
        "alice"
    );
    assert_eq!(
        ledger.engine.authenticate(&bob).await.expect("bob"),
        "bob@example.org"
    );
    // Another process on the ledger sees the same tokens.
    let other = ledger.reopen().await;
    assert_eq!(
        other.authenticate(&bob).await.expect("bob"),
        "bob@example.org"
    );
}

#[tokio::test]
async fn revoked_and_unknown_tokens_are_refused_alike() {
    let ledger = Ledger::new().await;
    let (token, info) = new_token(&ledger, "alice").await;
    let (kept, _) = new_token(&ledger, "alice").await;
    ledger
        .engine
        .authenticate(&token)
        .await
        .expect("works before");

    let revoked = ledger.engine.revoke_token(&info.id).await.expect("revoke");
    assert!(revoked.revoked_at.is_some(), "{revoked:?}");
    let again = ledger.engine.revoke_token(&info.id).await.expect("again");
    assert_eq!(
        again.revoked_at, revoked.revoked_at,
        "the first revocation stands"
    );

    let after_revoke = is_unauthorized(ledger.engine.authenticate(&token).await);
    let unknown = format!("{TOKEN_PREFIX}{}", "0".repeat(64));
    let never_made = is_unauthorized(ledger.engine.authenticate(&unknown).await);
    let malformed = is_unauthorized(ledger.engine.authenticate("").await);
    assert_eq!(
        after_revoke, never_made,
        "nothing tells revoked from unknown"
    );
    assert_eq!(never_made, malformed);
    assert_eq!(after_revoke.http_status(), 401);
    // The other token of the same owner still works.
    assert_eq!(
        ledger.engine.authenticate(&kept).await.expect("kept"),
        "alice"
    );
}

#[tokio::test]
async fn revoking_an_unknown_token_is_not_found() {
    let ledger = Ledger::new().await;
    for id in ["01900000-0000-7000-8000-000000000001", "not-a-uuid"] {
        match ledger.engine.revoke_token(id).await {
            Err(Error::NotFound { details, .. }) => assert_eq!(details.entity, "token"),
            other => panic!("{id}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn the_list_shows_every_token_but_never_the_token() {
    let ledger = Ledger::new().await;
    let (first, a) = ledger
        .engine
        .create_token("alice", Some("laptop"))
        .await
        .expect("a");
    let (second, b) = new_token(&ledger, "bob").await;
    let listed = ledger.engine.tokens().await.expect("list");
    assert_eq!(listed, vec![a, b], "oldest first, as made");
    let text = serde_json::to_string(&listed).expect("json");
    for token in [&first, &second] {
        assert!(!text.contains(&token[TOKEN_PREFIX.len()..]), "{text}");
    }
}

#[tokio::test]
async fn owners_and_names_are_checked() {
    let ledger = Ledger::new().await;
    for owner in ["", "has space", &"o".repeat(129)] {
        match ledger.engine.create_token(owner, None).await {
            Err(Error::InvalidInput { details, .. }) => assert_eq!(details.field, "owner_id"),
            other => panic!("{owner:?}: {other:?}"),
        }
    }
    match ledger.engine.create_token("alice", Some("a\u{7}b")).await {
        Err(Error::InvalidInput { details, .. }) => assert_eq!(details.field, "name"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        ledger.count("tokens").await,
        0,
        "a refused token leaves no row"
    );
}

#[tokio::test]
async fn last_use_is_written_at_most_once_a_minute() {
    let ledger = Ledger::new().await;
    let (token, info) = new_token(&ledger, "alice").await;
    let last_used = || async {
        let listed = ledger.engine.tokens().await.expect("list");
        listed
            .into_iter()
            .find(|t| t.id == info.id)
            .expect("listed")
            .last_used_at
    };
    assert_eq!(last_used().await, None);
    ledger.engine.authenticate(&token).await.expect("first use");
    let first = last_used().await.expect("the first use is recorded");
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    ledger
        .engine
        .authenticate(&token)
        .await
        .expect("second use");
    assert_eq!(
        last_used().await.as_ref(),
        Some(&first),
        "no write within a minute"
    );

    // Its recorded use two minutes old, the next use writes again.
    let raw = ledger.raw().await;
    raw.execute(
        Sql {
            sqlite: "UPDATE tokens SET last_used_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '-120 seconds')",
            postgres: "UPDATE tokens SET last_used_at = now() - interval '120 seconds'",
        },
        &[],
    )
    .await
    .expect("age it");
    raw.close().await;
    let aged = last_used().await.expect("aged");
    ledger.engine.authenticate(&token).await.expect("third use");
    let third = last_used().await.expect("recorded");
    assert!(third > aged, "{third} after {aged}");
}
