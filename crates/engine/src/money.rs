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
}
