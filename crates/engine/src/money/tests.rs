//! Amounts, prices and costs.

#![allow(clippy::unwrap_used)]

use super::*;

fn amount(text: &str) -> Amount {
    Amount::parse(text).unwrap()
}

#[test]
fn an_amount_is_a_decimal_string_read_exactly() {
    assert_eq!(amount("0.15").nanos(), Some(150_000_000));
    assert_eq!(amount("0.000000001").nanos(), Some(1));
    assert_eq!(amount("12").nanos(), Some(12_000_000_000));
    assert_eq!(amount(".5").nanos(), Some(500_000_000));
    for (bad, says) in [
        ("", "not an amount"),
        ("-1", "not an amount"),
        ("1e3", "not an amount"),
        ("1.2.3", "not an amount"),
        (".", "not an amount"),
        (" 1", "not an amount"),
        ("0.0000000001", "more than 9 decimal places"),
    ] {
        let why = Amount::parse(bad).unwrap_err();
        assert!(why.contains(says), "{bad:?}: {why}");
    }
    let number: std::result::Result<Amount, _> = serde_json::from_str("0.15");
    assert!(number.unwrap_err().to_string().contains("decimal string"));
    let text: Amount = serde_json::from_str("\"0.15\"").unwrap();
    assert_eq!(serde_json::to_string(&text).unwrap(), "\"0.15\"");
}

#[test]
fn an_amount_is_shown_with_at_least_two_decimal_places() {
    assert_eq!(amount("1").to_string(), "1.00");
    assert_eq!(amount("1.000").to_string(), "1.00");
    assert_eq!(amount("0.00015").to_string(), "0.00015");
    assert_eq!(Amount::from_nanos(1_000_000_000).to_string(), "1.00");
    assert_eq!(Amount::from_nanos(1).to_string(), "0.000000001");
}

#[test]
fn a_thousand_amounts_of_a_thousandth_add_up_to_exactly_one() {
    let each = amount("0.001").nanos().unwrap();
    let total: i64 = (0..1000).map(|_| each).sum();
    assert_eq!(Amount::from_nanos(total), amount("1"));
    assert_eq!(Amount::from_nanos(total).to_string(), "1.00");
}

#[test]
fn a_cost_is_the_request_and_each_token_rounded_up_to_the_billionth() {
    let price = Price {
        currency: "USD".into(),
        per_request: Some(amount("0.01")),
        per_1k_input_tokens: Some(amount("0.15")),
        per_1k_output_tokens: Some(amount("0.60")),
    };
    // 0.01 + 1000 × 0.00015 + 500 × 0.0006 = 0.01 + 0.15 + 0.30
    assert_eq!(price.cost_nanos(1000, 500), Some(460_000_000));
    // One token at 0.000000001 a thousand is a trillionth: counted as a billionth.
    let tiny = Price {
        currency: "USD".into(),
        per_request: None,
        per_1k_input_tokens: Some(amount("0.000000001")),
        per_1k_output_tokens: None,
    };
    assert_eq!(tiny.cost_nanos(1, 0), Some(1));
    assert_eq!(tiny.cost_nanos(0, 0), Some(0));
}

#[test]
fn a_price_names_what_is_wrong_with_it() {
    let mut price = Price {
        currency: "usd".into(),
        per_request: Some(amount("0.01")),
        per_1k_input_tokens: None,
        per_1k_output_tokens: None,
    };
    let e = price.validate("provider.price").unwrap_err();
    assert!(e.to_string().contains("currency code"), "{e}");
    price.currency = "USD".into();
    price.validate("provider.price").unwrap();
    price.per_request = None;
    let e = price.validate("provider.price").unwrap_err();
    assert!(e.to_string().contains("no amount"), "{e}");
    price.per_1k_output_tokens = Some(amount("1000001"));
    let e = price.validate("provider.price").unwrap_err();
    assert!(e.to_string().contains("more than onejob can count"), "{e}");
}

/// Every kind that costs nothing is a kind attempts end with, so a renamed kind cannot
/// silently start charging.
#[test]
fn every_free_failure_is_a_failure_kind() {
    for kind in cost::FREE_FAILURES {
        assert!(crate::failure::FailureKind::parse(kind).is_some(), "{kind}");
    }
}

#[test]
fn the_worst_case_counts_every_byte_in_and_the_asked_or_the_window_out() {
    let price = Price {
        currency: "USD".into(),
        per_request: Some(amount("0.01")),
        per_1k_input_tokens: Some(amount("1")),
        per_1k_output_tokens: Some(amount("2")),
    };
    let body = r#"{"max_tokens": 500, "messages": []}"#;
    let bytes = i64::try_from(body.len()).unwrap();
    // 0.01 + a thousandth a byte + 500 × 0.002
    let expected = 10_000_000 + bytes * 1_000_000 + 1_000_000_000;
    assert_eq!(price.worst_nanos(body, Some(8000)), Some(expected));
    // No max_tokens: the whole window of output.
    let body = r#"{"messages": []}"#;
    let bytes = i64::try_from(body.len()).unwrap();
    let expected = 10_000_000 + bytes * 1_000_000 + 8000 * 2_000_000;
    assert_eq!(price.worst_nanos(body, Some(8000)), Some(expected));
    // No more input than the window holds.
    assert_eq!(
        price.worst_nanos(&"x".repeat(100), Some(10)),
        Some(10_000_000 + 10 * 1_000_000 + 10 * 2_000_000)
    );
}

/// SQLite keeps what each day holds by triggers over a column that writes the money rule in
/// SQL (migration 0014). Every state, with every failure kind, a settled cost or none, moved
/// from day to day, unpriced and priced: the column agrees with `charged`, and the day's
/// total with the column.
#[tokio::test]
async fn the_ledgers_held_rule_is_the_money_rule() {
    use crate::attempt::AttemptState;
    use sqlx::Connection;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ledger.db");
    let engine = crate::Engine::open(&path).await.unwrap();
    let job = engine
        .submit(
            "local",
            "held",
            r#"{"route": ["sandbox"], "input": {"n": 1}}"#,
        )
        .await
        .unwrap();
    engine.close().await;
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite:{}", path.display()))
        .await
        .unwrap();
    sqlx::query(
        "INSERT INTO attempts (id, job_id, number, provider, state, job_version, created_at) \
         VALUES ('held', ?1, 99, 'sandbox', 'pending', 1, '2026-01-01T00:00:00.000Z')",
    )
    .bind(&job.job.id)
    .execute(&mut conn)
    .await
    .unwrap();
    let kinds = std::iter::once(None).chain(
        crate::failure::FailureKind::ALL
            .iter()
            .map(|k| Some(k.as_str())),
    );
    let mut step = 0;
    for kind in kinds {
        for state in AttemptState::ALL {
            for cost in [None, Some(7)] {
                for currency in [None, Some("USD")] {
                    step += 1;
                    let day = format!("2026-01-{:02}T10:00:00.000Z", 1 + step % 28);
                    sqlx::query(
                        "UPDATE attempts SET state = ?1, error_kind = ?2, worst_nanos = 100, \
                         cost_nanos = ?3, currency = ?4, sent_at = ?5 WHERE id = 'held'",
                    )
                    .bind(state.as_str())
                    .bind(kind)
                    .bind(cost)
                    .bind(currency)
                    .bind(&day)
                    .execute(&mut conn)
                    .await
                    .unwrap();
                    let column: i64 =
                        sqlx::query_scalar("SELECT held_nanos FROM attempts WHERE id = 'held'")
                            .fetch_one(&mut conn)
                            .await
                            .unwrap();
                    let days: Vec<(String, i64)> = sqlx::query_as(
                        "SELECT day, held_nanos FROM charged_days WHERE held_nanos <> 0",
                    )
                    .fetch_all(&mut conn)
                    .await
                    .unwrap();
                    let rule = match currency {
                        None => 0,
                        Some(_) => cost::held(state, kind, 100, cost),
                    };
                    let what = format!("{state:?} {kind:?} cost {cost:?} {currency:?}");
                    assert_eq!(column, rule, "{what}");
                    let expected = match rule {
                        0 => vec![],
                        held => vec![(day[..10].to_owned(), held)],
                    };
                    assert_eq!(days, expected, "{what}");
                }
            }
        }
    }
}
