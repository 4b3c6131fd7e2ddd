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

mod budget;
mod cost;

pub use budget::{Budget, BudgetConfig, BudgetPeriod};
#[cfg(any(test, feature = "testing"))]
pub(crate) use cost::held;
pub(crate) use cost::{charged, free_failures_json, totals, Charge};
pub use cost::{Cost, Spend, SpendBy, SpendLine};

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

/// Checks that `code` is a currency code (three capital letters, ISO 4217); the error names
/// `{field}.currency`.
pub(crate) fn check_currency(code: &str, field: &str) -> Result<()> {
    if code.len() != 3 || !code.bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(Error::invalid_input(
            format!("{field}.currency"),
            format!("{code:?} is not a currency code; write its three capital letters (ISO 4217), such as USD or EUR"),
        ));
    }
    Ok(())
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
        check_currency(&self.currency, field)?;
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
mod tests;
