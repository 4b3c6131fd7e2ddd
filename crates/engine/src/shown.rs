//! How a face shows a value that may be large (SPEC §13): a result, intent or event detail whose
//! JSON text is over 64 KiB is shown by its size and its first part, and read whole only when a
//! person asks for it.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use specta::Type;

/// A value whose JSON text is longer than this many bytes is large: a job's intent or result
/// by its text in the ledger ([`ShownValue::measured`]), an event's detail by its pretty text
/// ([`ShownValue::of`]).
pub(crate) const LARGE_BYTES: usize = 64 * 1024;
/// At most this many bytes of a large value's pretty JSON text are its first part.
pub(crate) const FIRST_PART_BYTES: usize = 4 * 1024;
/// How many characters of a large value's JSON text the ledger gives to make its first part:
/// enough for [`FIRST_PART_BYTES`] once indented, since indenting only adds.
pub(crate) const FIRST_PART_CHARS: usize = FIRST_PART_BYTES;

/// A value as a screen receives it: whole, or when large only by its size and first part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Type)]
#[serde(tag = "shown", rename_all = "snake_case")]
pub enum ShownValue {
    /// A value of at most `LARGE_BYTES`, whole.
    Whole { value: Value },
    /// A larger value: the length in bytes of its JSON text (for a job's intent or result, the
    /// text the ledger holds, measured there; for an event's detail, its pretty text), and the
    /// start of its pretty text (2-space indent, the text the screen shows and a saved file
    /// holds), at most `FIRST_PART_BYTES`, cut on a character boundary and, when one is
    /// near, after a line.
    Large { size: u32, first_part: String },
}

impl ShownValue {
    /// The value whole when its pretty JSON text is at most `LARGE_BYTES`, else its size
    /// and first part. One pass over the text, which is never held whole.
    pub fn of(value: Value) -> ShownValue {
        let mut text = FirstPartWriter::new(FIRST_PART_BYTES);
        if serde_json::to_writer_pretty(&mut text, &value).is_err() || text.len <= LARGE_BYTES {
            // A Value always serialises, and `FirstPartWriter` never fails: keep it whole either way.
            return ShownValue::Whole { value };
        }
        ShownValue::Large {
            size: u32::try_from(text.len).unwrap_or(u32::MAX),
            first_part: first_part(&text.kept).to_owned(),
        }
    }
}

impl ShownValue {
    /// A value the ledger measured: `bytes`, the length of its JSON text as stored, and `text`,
    /// that text whole when `bytes` is at most [`LARGE_BYTES`], else its first characters. A
    /// large value's size is its stored length; its first part is the start of its pretty
    /// text, made from those first characters without the rest ever being read.
    pub(crate) fn measured(bytes: i64, text: &str) -> ShownValue {
        let size = usize::try_from(bytes).unwrap_or(usize::MAX);
        if size <= LARGE_BYTES {
            return ShownValue::Whole {
                value: crate::store::json_column(text),
            };
        }
        let pretty = pretty_start(text, FIRST_PART_BYTES);
        ShownValue::Large {
            size: u32::try_from(size).unwrap_or(u32::MAX),
            first_part: first_part(&pretty.as_bytes()[..pretty.len().min(FIRST_PART_BYTES)])
                .to_owned(),
        }
    }
}

/// The start of a JSON text's pretty form (2-space indent, as `serde_json` writes it) from the
/// start of the text alone, at most `keep` bytes and more when a character ends past it: each
/// token copied, white space outside strings dropped, a line and indent after each `{`, `[`
/// and `,`, one before each `}` and `]`, and `": "` between a key and its value. An empty
/// object or array stays `{}` or `[]`.
fn pretty_start(text: &str, keep: usize) -> String {
    let mut out = String::with_capacity(keep.min(FIRST_PART_BYTES) + 64);
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = text.chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', 2 * depth));
    };
    while let Some(c) = chars.next() {
        if out.len() >= keep {
            break;
        }
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                while chars.peek().is_some_and(|n| n.is_ascii_whitespace()) {
                    chars.next();
                }
                let close = if c == '{' { '}' } else { ']' };
                if chars.peek() == Some(&close) {
                    chars.next();
                    out.push(close);
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_ascii_whitespace() => {}
            c => out.push(c),
        }
    }
    out
}

/// Which value of a job a person asks for whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Type)]
#[serde(tag = "part", rename_all = "snake_case")]
pub enum JobPart {
    Intent,
    Result,
    /// The detail of the job's event at `index` in its history, oldest first from 0 (the
    /// history is append-only, so an index always names the same event).
    EventDetail {
        index: u32,
    },
    /// The body sent for the job's attempt `number` (SPEC §16), as its executor recorded it.
    SentBody {
        number: u32,
    },
}

impl JobPart {
    /// A short name for files and messages: `intent`, `result`, `event-3`.
    pub fn name(self) -> String {
        match self {
            JobPart::Intent => "intent".to_owned(),
            JobPart::Result => "result".to_owned(),
            JobPart::EventDetail { index } => format!("event-{index}"),
            JobPart::SentBody { number } => format!("attempt-{number}-body"),
        }
    }
}

/// A writer that counts every byte and keeps only the first `keep`.
struct FirstPartWriter {
    keep: usize,
    kept: Vec<u8>,
    len: usize,
}

impl FirstPartWriter {
    fn new(keep: usize) -> FirstPartWriter {
        FirstPartWriter {
            keep,
            kept: Vec::with_capacity(keep),
            len: 0,
        }
    }
}

impl std::io::Write for FirstPartWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.keep.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&buf[..room.min(buf.len())]);
        self.len += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The start of a text cut at an arbitrary byte: its whole characters, ending after its last
/// line break when that keeps at least half of them.
fn first_part(head: &[u8]) -> &str {
    let text = match std::str::from_utf8(head) {
        Ok(text) => text,
        // Only the last character can be cut short, so what precedes it is valid.
        Err(e) => std::str::from_utf8(&head[..e.valid_up_to()]).unwrap_or_default(),
    };
    match text.rfind('\n') {
        Some(line) if line >= text.len() / 2 => &text[..line],
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An object whose pretty text is about `bytes` long: lines of `"kNNNNN": "xxxx…"`.
    fn object_of(bytes: usize) -> Value {
        let line = 64;
        let map = (0..bytes / line)
            .map(|i| (format!("k{i:06}"), json!("x".repeat(line - 18))))
            .collect();
        Value::Object(map)
    }

    fn pretty(value: &Value) -> String {
        serde_json::to_string_pretty(value).unwrap()
    }

    #[test]
    fn a_small_value_is_shown_whole() {
        let value = json!({"answer": 42, "items": [1, 2, 3]});
        assert_eq!(ShownValue::of(value.clone()), ShownValue::Whole { value });
    }

    #[test]
    fn a_value_of_exactly_64_kib_is_whole_and_one_byte_more_is_large() {
        // A string's pretty text is the string and its two quotes.
        let at = json!("a".repeat(LARGE_BYTES - 2));
        assert_eq!(pretty(&at).len(), LARGE_BYTES);
        assert!(matches!(ShownValue::of(at), ShownValue::Whole { .. }));
        let over = json!("a".repeat(LARGE_BYTES - 1));
        assert_eq!(
            ShownValue::of(over),
            ShownValue::Large {
                size: LARGE_BYTES as u32 + 1,
                first_part: format!("\"{}", "a".repeat(FIRST_PART_BYTES - 1)),
            }
        );
    }

    #[test]
    fn a_large_value_gives_the_size_of_its_pretty_text_and_its_first_lines() {
        let value = object_of(5 * 1024 * 1024);
        let text = pretty(&value);
        let ShownValue::Large { size, first_part } = ShownValue::of(value) else {
            panic!("a 5 MiB value is large");
        };
        assert_eq!(size as usize, text.len());
        assert!(first_part.len() <= FIRST_PART_BYTES);
        assert!(first_part.len() > FIRST_PART_BYTES / 2);
        assert!(text.starts_with(&first_part));
        // Cut after a whole line: the next character of the text is the line break.
        assert_eq!(&text[first_part.len()..first_part.len() + 1], "\n");
    }

    #[test]
    fn the_first_part_is_cut_on_a_character_boundary() {
        // "é" is two bytes and "€" three: a cut at FIRST_PART_BYTES falls inside one of them.
        for filler in ["é", "€", "😀"] {
            let value = json!(filler.repeat(LARGE_BYTES));
            let ShownValue::Large { first_part, .. } = ShownValue::of(value) else {
                panic!("a long string is large");
            };
            assert!(first_part.len() <= FIRST_PART_BYTES);
            assert!(first_part.len() > FIRST_PART_BYTES - filler.len());
            assert!(first_part.starts_with('"'));
            assert!(first_part[1..].chars().all(|c| filler.starts_with(c)));
        }
    }

    #[test]
    fn a_first_part_with_no_line_break_near_its_end_keeps_its_whole_characters() {
        assert_eq!(first_part("ab\ncdefgh".as_bytes()), "ab\ncdefgh");
        assert_eq!(first_part("abcdef\ngh".as_bytes()), "abcdef");
        assert_eq!(first_part(&"ab€".as_bytes()[..4]), "ab");
    }

    #[test]
    fn a_part_is_named_in_words_and_sent_tagged() {
        assert_eq!(JobPart::EventDetail { index: 3 }.name(), "event-3");
        assert_eq!(
            serde_json::to_value(JobPart::EventDetail { index: 3 }).unwrap(),
            json!({"part": "event_detail", "index": 3})
        );
        assert_eq!(
            serde_json::to_value(JobPart::Result).unwrap(),
            json!({"part": "result"})
        );
    }

    #[test]
    fn the_stored_texts_start_indents_as_the_whole_value_does() {
        let values = [
            json!({"a": {}, "b": [], "c": [1, {"d": null}], "e": "x: [y], {z}", "f": "q\"\\\"}"}),
            json!([[[]], {"k": [true, false, -1.5e3]}, "ünïcødé ✓", "\n\t\u{1}"]),
            json!("plain"),
            json!({"nested": {"deeper": {"deepest": [1, 2, 3]}}}),
        ];
        for value in values {
            let compact = serde_json::to_string(&value).unwrap();
            assert_eq!(
                pretty_start(&compact, usize::MAX),
                pretty(&value),
                "{compact}"
            );
            // White space outside strings, as a person may have written it, changes nothing.
            let spaced = serde_json::to_string_pretty(&value)
                .unwrap()
                .replace('\n', "\n \t");
            assert_eq!(
                pretty_start(&spaced, usize::MAX),
                pretty(&value),
                "{spaced}"
            );
        }
    }

    #[test]
    fn a_value_measured_by_the_ledger_is_whole_up_to_64_kib_and_its_first_part_past_it() {
        let small = json!({"ok": true});
        let text = serde_json::to_string(&small).unwrap();
        assert_eq!(
            ShownValue::measured(text.len() as i64, &text),
            ShownValue::Whole { value: small }
        );
        let big = object_of(200 * 1024);
        let stored = serde_json::to_string(&big).unwrap();
        let head: String = stored.chars().take(FIRST_PART_CHARS).collect();
        let ShownValue::Large {
            first_part: whole, ..
        } = ShownValue::of(big)
        else {
            panic!("200 KiB is large");
        };
        assert_eq!(
            ShownValue::measured(stored.len() as i64, &head),
            ShownValue::Large {
                size: stored.len() as u32,
                first_part: whole,
            }
        );
    }
}
