//! Money (SPEC §17): a provider's prices, and what attempts cost. Amounts are exact decimals,
//! never floating point: written as decimal strings (`"0.15"`), held as [`Amount`] (a
//! `rust_decimal::Decimal` of at most nine decimal places) and stored in the ledger as whole
//! billionths of the currency's unit ([`Amount::nanos`]), so both backends add them up exactly
//! in SQL (ADR 0060).

use std::fmt;
use std::str::FromStr;

use rust_decimal::Decimal;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

/// Decimal places an amount may have: billionths of the currency's unit.
pub const SCALE: u32 = 9;
/// Billionths in one unit.
const NANOS_PER_UNIT: i64 = 1_000_000_000;
/// The largest price a provider may state, in units: far above any real price, and small
/// enough that a cost of millions of tokens at it still fits the ledger's 64-bit billionths.
pub const MAX_PRICE: i64 = 1_000_000;

/// An amount of money, never negative: a decimal string in JSON, at most nine decimal places.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Amount(Decimal);

impl Amount {
    pub const ZERO: Amount = Amount(Decimal::ZERO);

    /// The amount of `nanos` billionths of a unit.
    pub fn from_nanos(nanos: i64) -> Amount {
        Amount(Decimal::new(nanos, SCALE))
    }

    /// The amount in billionths of a unit, as the ledger stores it; `None` past 64 bits.
    pub fn nanos(self) -> Option<i64> {
        let scaled = self.0.checked_mul(Decimal::from(NANOS_PER_UNIT))?;
        if !scaled.fract().is_zero() {
            return None;
        }
        i64::try_from(scaled).ok()
    }

    /// The amount as an exact decimal.
    pub fn decimal(self) -> Decimal {
        self.0
    }

    /// Reads a decimal string such as `"0.15"`: digits with at most one point, at most nine
    /// decimal places, not negative, no exponent. The error says what is wrong with it.
    pub fn parse(text: &str) -> std::result::Result<Amount, String> {
        let plain = !text.is_empty()
            && text.bytes().all(|b| b.is_ascii_digit() || b == b'.')
            && text.bytes().filter(|&b| b == b'.').count() <= 1
            && text.bytes().any(|b| b.is_ascii_digit());
        if !plain {
            return Err(format!(
                "{text:?} is not an amount: write a decimal string of digits and at most one point, such as \"0.15\""
            ));
        }
        let decimal = Decimal::from_str(text)
            .map_err(|_| format!("{text:?} is too large to be an amount"))?;
        if decimal.scale() > SCALE {
            return Err(format!(
                "{text:?} has more than {SCALE} decimal places; onejob counts money to the billionth"
            ));
        }
        Ok(Amount(decimal))
    }
}

/// Shown with its trailing zeros dropped but at least two decimal places: `0.15`, `1.00`,
/// `0.00015`.
impl fmt::Display for Amount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = self.0.normalize();
        if shown.scale() < 2 {
            shown.rescale(2);
        }
        write!(f, "{shown}")
    }
}

impl Serialize for Amount {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Amount, D::Error> {
        let value = serde_json::Value::deserialize(d)?;
        match value {
            serde_json::Value::String(text) => Amount::parse(&text).map_err(serde::de::Error::custom),
            serde_json::Value::Number(n) => Err(serde::de::Error::custom(format!(
                "{n} is a number; write money as a decimal string, such as \"{n}\", so that no digit is lost to floating point"
            ))),
            other => Err(serde::de::Error::custom(format!(
                "{other} is not an amount; write a decimal string, such as \"0.15\""
            ))),
        }
    }
}

/// A provider's prices (SPEC §17), in one currency. Each amount it gives is charged: per
/// request sent, per thousand input tokens, per thousand output tokens.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    /// The currency's ISO 4217 code: three capital letters, such as USD or EUR.
    pub currency: String,
    /// Charged for each request sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_request: Option<Amount>,
    /// Charged per thousand input (prompt) tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_1k_input_tokens: Option<Amount>,
    /// Charged per thousand output (completion) tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_1k_output_tokens: Option<Amount>,
}

/// The fields a price may have.
pub const PRICE_FIELDS: [&str; 4] = [
    "currency",
    "per_request",
    "per_1k_input_tokens",
    "per_1k_output_tokens",
];

impl Price {
    /// Checks the currency's code and that each amount is within [`MAX_PRICE`]; `field` is
    /// where the price stands (`provider.price`), which errors name with the part at fault.
    pub fn validate(&self, field: &str) -> Result<()> {
        let code = &self.currency;
        if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
            return Err(Error::invalid_input(
                format!("{field}.currency"),
                format!("{code:?} is not a currency code; write its three capital letters (ISO 4217), such as USD or EUR"),
            ));
        }
        let amounts = [
            ("per_request", self.per_request),
            ("per_1k_input_tokens", self.per_1k_input_tokens),
            ("per_1k_output_tokens", self.per_1k_output_tokens),
        ];
        if amounts.iter().all(|(_, a)| a.is_none()) {
            return Err(Error::invalid_input(
                field.to_owned(),
                "names a currency but no amount; give per_request, per_1k_input_tokens or per_1k_output_tokens (or leave price out)",
            ));
        }
        for (name, amount) in amounts {
            if let Some(amount) = amount {
                if amount.decimal() > Decimal::from(MAX_PRICE) {
                    return Err(Error::invalid_input(
                        format!("{field}.{name}"),
                        format!(
                            "{amount} is more than onejob can count ({MAX_PRICE} a unit at most)"
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Names the part of a price given as JSON at `field` that is at fault, before the price is
    /// read: a field a price does not have, a currency that is not a string, an amount that is
    /// not a decimal string, or no currency.
    pub fn check_json(price: &serde_json::Value, field: &str) -> Result<()> {
        use serde_json::Value;
        let Value::Object(parts) = price else {
            return Err(Error::invalid_input(
                field.to_owned(),
                "must be an object such as {\"currency\": \"USD\", \"per_request\": \"0.01\"}",
            ));
        };
        for (name, value) in parts {
            let at = format!("{field}.{name}");
            let why = match (name.as_str(), value) {
                (name, _) if !PRICE_FIELDS.contains(&name) => format!(
                    "is not a price field; a price has only {}",
                    PRICE_FIELDS.join(", ")
                ),
                ("currency", Value::String(_)) | (_, Value::Null) => continue,
                ("currency", _) => "must be a currency code as a string, such as \"USD\"".to_owned(),
                (_, Value::String(text)) => match Amount::parse(text) {
                    Ok(_) => continue,
                    Err(why) => why,
                },
                (_, Value::Number(n)) => format!(
                    "{n} is a number; write money as a decimal string, such as \"{n}\", so that no digit is lost to floating point"
                ),
                _ => "must be a decimal string, such as \"0.15\"".to_owned(),
            };
            return Err(Error::invalid_input(at, why));
        }
        if !parts.contains_key("currency") {
            return Err(Error::invalid_input(
                format!("{field}.currency"),
                "is required: the currency the amounts are in, such as \"USD\"",
            ));
        }
        Ok(())
    }

    /// What one request that used `input` and `output` tokens costs, in billionths: the
    /// request's price, and each thousand tokens' price for every token, each part rounded up
    /// to the billionth, so a cost is never counted short. `None` past 64 bits.
    pub fn cost_nanos(&self, input: u64, output: u64) -> Option<i64> {
        let request = self.per_request.map_or(Some(0), Amount::nanos)?;
        let input = per_thousand(self.per_1k_input_tokens, input)?;
        let output = per_thousand(self.per_1k_output_tokens, output)?;
        request.checked_add(input)?.checked_add(output)
    }
}

impl Price {
    /// The worst case of one request sent with `body` (SPEC §17, ADR 0062), in billionths: the
    /// request's price, every byte of the body as an input token (a token never stands for
    /// less than one byte of what it reads, and a request's body holds its whole prompt), and
    /// the body's own `max_tokens` (`max_completion_tokens`, `max_output_tokens`) of output,
    /// or the provider's context window where the body gives none; each count at most the
    /// context window. `None` past 64 bits.
    pub fn worst_nanos(&self, body: &str, context_window: Option<u64>) -> Option<i64> {
        let window = context_window.unwrap_or(u64::MAX);
        let input = u64::try_from(body.len()).unwrap_or(u64::MAX).min(window);
        let asked = serde_json::from_str::<serde_json::Value>(body)
            .ok()
            .and_then(|body| {
                ["max_tokens", "max_completion_tokens", "max_output_tokens"]
                    .iter()
                    .find_map(|name| body.get(name).and_then(serde_json::Value::as_u64))
            });
        let output = asked.or(context_window).unwrap_or(0).min(window);
        self.cost_nanos(input, output)
    }
}

/// What spend is summed by (SPEC §17).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, specta::Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum SpendBy {
    /// The day each attempt was sent, UTC (`2026-12-04`).
    #[default]
    Day,
    Provider,
    Owner,
}

impl SpendBy {
    pub fn as_str(self) -> &'static str {
        match self {
            SpendBy::Day => "day",
            SpendBy::Provider => "provider",
            SpendBy::Owner => "owner",
        }
    }
}

/// One line of spend: a day, a provider or an owner, in one currency.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SpendLine {
    /// The day (`2026-12-04`), the provider's name or the owner, as the spend was summed by.
    pub key: String,
    #[serde(flatten)]
    pub cost: Cost,
}

/// Spend summed by day, provider or owner, and its total (SPEC §17).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Spend {
    pub by: SpendBy,
    pub lines: Vec<SpendLine>,
    /// Every line together; `None` when nothing was charged.
    pub total: Option<Cost>,
}

impl Spend {
    /// The lines as `onejob spend` and `GET /v1/spend` give them (SPEC §17): each with its
    /// day, provider or owner under that name.
    pub fn answer_lines(&self) -> Vec<serde_json::Value> {
        self.lines
            .iter()
            .map(|line| {
                serde_json::json!({
                    self.by.as_str(): line.key,
                    "currency": line.cost.currency,
                    "spent": line.cost.spent,
                    "at_risk": line.cost.at_risk,
                })
            })
            .collect()
    }

    /// The whole answer: `{"spend": [lines], "total": {…} | null}`.
    pub fn answer(&self) -> serde_json::Value {
        serde_json::json!({ "spend": self.answer_lines(), "total": self.total })
    }
}

/// What an attempt is charged when it is sent at a provider with a price: the price (a copy,
/// so a later change of price changes nothing spent) and its worst case.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Charge {
    pub currency: String,
    /// The price as JSON.
    pub price: String,
    pub worst_nanos: i64,
}

impl Price {
    /// The charge of one request sent with `body` at this price (its worst case as
    /// [`Price::worst_nanos`] counts it, `i64::MAX` billionths past 64 bits).
    pub(crate) fn charge(&self, body: &str, context_window: Option<u64>) -> Charge {
        Charge {
            currency: self.currency.clone(),
            price: serde_json::to_string(self).unwrap_or_default(),
            worst_nanos: self.worst_nanos(body, context_window).unwrap_or(i64::MAX),
        }
    }
}

/// What an attempt cost, or a job in one currency (SPEC §17), amounts as decimal strings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, specta::Type)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Cost {
    /// The currency's ISO 4217 code.
    pub currency: String,
    /// Spent: answered attempts at what they used (at their worst case where the answer
    /// reported no usage), and attempts settled as done or abandoned at their worst case.
    /// An attempt proven never sent, or refused before any effect, adds nothing.
    pub spent: String,
    /// At risk: `unknown` attempts at their worst case, until they are resolved.
    pub at_risk: String,
}

/// An attempt's money as its ledger row holds it, in billionths.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Charged {
    pub spent: i64,
    pub at_risk: i64,
}

/// What an attempt in `state`, ended with `error_kind`, has spent and has at risk, given its
/// worst case and its settled cost (ADR 0062). The same rule is written in SQL for the sums of
/// spend (`attempts/spend.sql`); `spend_rule_is_the_views_rule` holds them together.
pub(crate) fn charged(
    state: crate::attempt::AttemptState,
    error_kind: Option<&str>,
    worst: i64,
    cost: Option<i64>,
) -> Charged {
    use crate::attempt::AttemptState as S;
    match state {
        S::Pending | S::InFlight => Charged::default(),
        S::Unknown => Charged {
            spent: 0,
            at_risk: worst,
        },
        S::Failed if error_kind.is_some_and(costs_nothing) => Charged::default(),
        _ => Charged {
            spent: cost.unwrap_or(worst),
            at_risk: 0,
        },
    }
}

/// The failures that prove a request was never sent, or refused before it had any effect: they
/// cost nothing (SPEC §17). Every other end of a sent attempt is charged.
pub(crate) const FREE_FAILURES: [&str; 9] = [
    "never_sent",
    "misconfigured",
    "rejected",
    "throttled",
    "server_error",
    "server_error_keyed",
    "reconciled_failed",
    "resolved_by_person",
    "cancelled",
];

/// Whether a failure of this kind costs nothing.
pub(crate) fn costs_nothing(kind: &str) -> bool {
    FREE_FAILURES.contains(&kind)
}

/// The cost of each currency among `attempts`, in the order each currency first appears.
pub fn totals<'a>(attempts: impl IntoIterator<Item = &'a crate::model::Attempt>) -> Vec<Cost> {
    let mut sums: Vec<(String, i64, i64)> = Vec::new();
    for cost in attempts.into_iter().filter_map(|a| a.cost.as_ref()) {
        let nanos = |text: &str| {
            Amount::parse(text)
                .ok()
                .and_then(Amount::nanos)
                .unwrap_or(0)
        };
        let (spent, at_risk) = (nanos(&cost.spent), nanos(&cost.at_risk));
        match sums.iter_mut().find(|(c, _, _)| *c == cost.currency) {
            Some(sum) => {
                sum.1 = sum.1.saturating_add(spent);
                sum.2 = sum.2.saturating_add(at_risk);
            }
            None => sums.push((cost.currency.clone(), spent, at_risk)),
        }
    }
    sums.into_iter()
        .map(|(currency, spent, at_risk)| Cost {
            currency,
            spent: Amount::from_nanos(spent).to_string(),
            at_risk: Amount::from_nanos(at_risk).to_string(),
        })
        .collect()
}

/// `tokens` at `price` a thousand, in billionths, rounded up.
fn per_thousand(price: Option<Amount>, tokens: u64) -> Option<i64> {
    let Some(price) = price else {
        return Some(0);
    };
    let total = i128::from(price.nanos()?).checked_mul(i128::from(tokens))?;
    let nanos = (total + 999) / 1000;
    i64::try_from(nanos).ok()
}

#[cfg(test)]
mod tests {
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
        for kind in FREE_FAILURES {
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
}
