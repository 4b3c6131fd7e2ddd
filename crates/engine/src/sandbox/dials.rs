//! The fault dials: what they hold, how they are read and checked, and the one roll per request
//! that picks a fault.

use std::time::Duration;

use rand::Rng;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};

/// The longest latency plus jitter the dials accept: ten minutes.
const MAX_DELAY_MS: u64 = 600_000;

/// The sandbox's fault dials. Every probability is 0.0–1.0; one number is rolled per request
/// and the faults are tried in field order, so at most one fault hits a request and their
/// probabilities add up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, specta::Type)]
#[serde(default, deny_unknown_fields)]
pub struct Dials {
    /// Base latency before answering, in milliseconds (default 300).
    pub latency_ms: u32,
    /// Added to the latency: uniform over 0..=jitter_ms (default 200).
    pub jitter_ms: u32,
    /// The request is processed (it counts as done) but the connection is held open and
    /// never answered.
    pub never_answer: f64,
    /// The request is processed, then the connection is closed without any response bytes.
    pub drop_after_processing: f64,
    /// 500 `{"error": …}`; the request is not processed.
    pub server_error: f64,
    /// 429 with `Retry-After: <retry_after_s>`; the request is not processed.
    pub throttle: f64,
    /// The `Retry-After` seconds of a throttled request (default 1).
    pub retry_after_s: u32,
    /// The request is processed and answered 200 with a body that is not JSON.
    pub malformed_json: f64,
    /// The request is processed and answered 200 with the normal answer plus an extra
    /// top-level key `"unexpected"` (in chat mode: in the message content).
    pub extra_key: f64,
    /// Chat mode: the message content is prose around the answer, not JSON.
    pub prose: f64,
    /// Chat mode: the content lacks its first required key.
    pub missing_required_key: f64,
    /// Chat mode: the content's first property has a value of the wrong type.
    pub wrong_type: f64,
    /// The request is processed, but the work takes `slow_work_ms` longer before it is
    /// answered: set past the provider's hard deadline, the attempt becomes `unknown` while the
    /// work goes on. Meanwhile a request with its key gets 409, and afterwards the stored answer,
    /// so a provider with `key_retention_s` settles it by a keyed replay.
    pub slow_work: f64,
    /// How much longer a `slow_work` request takes, in milliseconds (default 15000: past the
    /// built-in sandbox's hard deadline of 10 s).
    pub slow_work_ms: u32,
    /// Whether a repeated `Idempotency-Key` gets the first answer (default true).
    pub honour_idempotency_key: bool,
}

impl Default for Dials {
    fn default() -> Self {
        Dials {
            latency_ms: 300,
            jitter_ms: 200,
            never_answer: 0.0,
            drop_after_processing: 0.0,
            server_error: 0.0,
            throttle: 0.0,
            retry_after_s: 1,
            malformed_json: 0.0,
            extra_key: 0.0,
            prose: 0.0,
            missing_required_key: 0.0,
            wrong_type: 0.0,
            slow_work: 0.0,
            slow_work_ms: 15_000,
            honour_idempotency_key: true,
        }
    }
}

/// What the dials can do to one request, in the order they are rolled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Fault {
    NeverAnswer,
    DropAfterProcessing,
    ServerError,
    Throttle,
    MalformedJson,
    ExtraKey,
    Prose,
    MissingRequiredKey,
    WrongType,
    SlowWork,
}

impl Dials {
    /// Reads dials from JSON text: an object whose fields are all optional; unknown or
    /// mistyped fields are `invalid_input` naming them (`dials.throttle`), and the result is
    /// validated.
    pub fn parse(text: &str) -> Result<Dials> {
        let value: Value = serde_json::from_str(text)
            .map_err(|e| Error::invalid_input("dials", format!("not valid JSON ({e})")))?;
        let Value::Object(fields) = &value else {
            return Err(Error::invalid_input("dials", "must be a JSON object"));
        };
        let known = serde_json::to_value(Dials::default())
            .map_err(|e| Error::internal(format!("cannot serialise the dials: {e}")))?;
        for (name, field) in fields {
            if known.get(name).is_none() {
                return Err(Error::invalid_input(
                    format!("dials.{name}"),
                    "is not a dial",
                ));
            }
            // One field at a time, so a wrong type names its field.
            let alone = Value::Object(Map::from_iter([(name.clone(), field.clone())]));
            serde_json::from_value::<Dials>(alone).map_err(|e| {
                Error::invalid_input(format!("dials.{name}"), format!("has the wrong type ({e})"))
            })?;
        }
        let dials: Dials = serde_json::from_value(value)
            .map_err(|e| Error::invalid_input("dials", format!("cannot be read ({e})")))?;
        dials.validate()?;
        Ok(dials)
    }

    /// Checks that every probability is finite and within 0–1, that they add up to at most 1,
    /// and that latency plus jitter is at most ten minutes; otherwise `invalid_input` naming
    /// the field (`dials.throttle`, or `dials` for the sum).
    pub fn validate(&self) -> Result<()> {
        let mut sum = 0.0;
        for (name, p) in self.probabilities() {
            if !p.is_finite() || !(0.0..=1.0).contains(&p) {
                return Err(Error::invalid_input(
                    format!("dials.{name}"),
                    format!("{p} is not a probability between 0 and 1"),
                ));
            }
            sum += p;
        }
        // A small tolerance, so 0.1 + 0.2 + 0.7 counts as 1.
        if sum > 1.0 + 1e-9 {
            return Err(Error::invalid_input(
                "dials",
                format!("the fault probabilities add up to {sum}; at most 1 is possible"),
            ));
        }
        if u64::from(self.latency_ms) + u64::from(self.jitter_ms) > MAX_DELAY_MS {
            return Err(Error::invalid_input(
                "dials.latency_ms",
                format!("latency_ms plus jitter_ms must be at most {MAX_DELAY_MS}"),
            ));
        }
        let slowest =
            u64::from(self.latency_ms) + u64::from(self.jitter_ms) + u64::from(self.slow_work_ms);
        if slowest > MAX_DELAY_MS {
            return Err(Error::invalid_input(
                "dials.slow_work_ms",
                format!(
                    "latency_ms plus jitter_ms plus slow_work_ms must be at most {MAX_DELAY_MS}"
                ),
            ));
        }
        Ok(())
    }

    fn probabilities(&self) -> [(&'static str, f64); 10] {
        [
            ("never_answer", self.never_answer),
            ("drop_after_processing", self.drop_after_processing),
            ("server_error", self.server_error),
            ("throttle", self.throttle),
            ("malformed_json", self.malformed_json),
            ("extra_key", self.extra_key),
            ("prose", self.prose),
            ("missing_required_key", self.missing_required_key),
            ("wrong_type", self.wrong_type),
            ("slow_work", self.slow_work),
        ]
    }

    /// One roll: the first fault whose cumulative probability exceeds it, if any.
    pub(super) fn roll(&self, rng: &mut impl Rng) -> Option<Fault> {
        let faults = [
            Fault::NeverAnswer,
            Fault::DropAfterProcessing,
            Fault::ServerError,
            Fault::Throttle,
            Fault::MalformedJson,
            Fault::ExtraKey,
            Fault::Prose,
            Fault::MissingRequiredKey,
            Fault::WrongType,
            Fault::SlowWork,
        ];
        let roll: f64 = rng.gen();
        let mut cumulative = 0.0;
        for (fault, (_, p)) in faults.into_iter().zip(self.probabilities()) {
            cumulative += p;
            if roll < cumulative {
                return Some(fault);
            }
        }
        None
    }

    pub(super) fn delay(&self, rng: &mut impl Rng) -> Duration {
        let jitter = rng.gen_range(0..=u64::from(self.jitter_ms));
        Duration::from_millis(u64::from(self.latency_ms) + jitter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_roll_picks_faults_in_field_order() {
        let dials = Dials {
            server_error: 1.0,
            ..Dials::default()
        };
        assert_eq!(
            dials.roll(&mut rand::thread_rng()),
            Some(Fault::ServerError)
        );
        assert_eq!(Dials::default().roll(&mut rand::thread_rng()), None);
    }

    #[test]
    fn dials_name_their_bad_field() {
        let err = Dials::parse(r#"{"throttle": "often"}"#).err();
        assert!(
            matches!(err, Some(Error::InvalidInput { ref details, .. }) if details.field == "dials.throttle")
        );
        let err = Dials::parse(r#"{"nope": 1}"#).err();
        assert!(
            matches!(err, Some(Error::InvalidInput { ref details, .. }) if details.field == "dials.nope")
        );
        let err = Dials::parse(r#"{"throttle": 0.6, "server_error": 0.6}"#).err();
        assert!(
            matches!(err, Some(Error::InvalidInput { ref details, .. }) if details.field == "dials")
        );
        assert_eq!(Dials::parse("{}").ok(), Some(Dials::default()));
    }
}
