//! What reaches the terminal: one JSON document on stdout, or `{"error": …}` on stderr with
//! the exit code of SPEC §11.

use std::io::Write;
use std::process::ExitCode;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use onejob_engine::Error;
use serde_json::{json, Value};

/// What a command prints on stdout, and the exit code it ends with.
#[derive(Debug)]
pub struct Reply {
    pub doc: Value,
    /// 0, or one of `submit --wait`'s outcome codes: the document is printed either way.
    pub code: u8,
}

impl From<Value> for Reply {
    fn from(doc: Value) -> Reply {
        Reply { doc, code: 0 }
    }
}

/// Prints a reply as compact JSON and a newline on stdout; returns its exit code.
pub fn reply(reply: &Reply) -> ExitCode {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{}", reply.doc).and_then(|()| out.flush()) {
        Ok(()) => ExitCode::from(reply.code),
        // Nobody is reading (a closed pipe): say so where someone may be.
        Err(e) => failure(&Error::internal(format!("cannot write to stdout: {e}"))),
    }
}

/// Prints an error as `{"error": {code, message, details}}` on stderr and returns its exit code.
pub fn failure(error: &Error) -> ExitCode {
    let doc = json!({ "error": error });
    // Nothing else can be done if stderr is gone too; the exit code still tells.
    let _ = writeln!(std::io::stderr().lock(), "{doc}");
    ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(1))
}

/// Handles what `try_parse` refused: help and version go to stdout with exit 0, every
/// usage error becomes `invalid_input`.
pub fn parse_failure(err: &clap::Error) -> ExitCode {
    match err.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => match err.print() {
            Ok(()) => ExitCode::SUCCESS,
            Err(_) => ExitCode::FAILURE,
        },
        _ => failure(&usage_error(err)),
    }
}

/// A clap usage error as `invalid_input`, naming the argument when clap knows it.
fn usage_error(err: &clap::Error) -> Error {
    let field = match err.kind() {
        ErrorKind::UnknownArgument | ErrorKind::InvalidSubcommand => None,
        _ => match err.get(ContextKind::InvalidArg) {
            Some(ContextValue::String(arg)) => Some(arg_name(arg)),
            Some(ContextValue::Strings(args)) => args.first().map(|a| arg_name(a)),
            _ => None,
        },
    };
    let field = field
        .filter(|f| !f.is_empty())
        .unwrap_or_else(|| "arguments".to_owned());
    Error::invalid_input(field, one_line(&err.render().to_string()))
}

/// `--retry-on <PROVIDER>` → `retry_on`, `<JOB_ID>` → `job_id`.
fn arg_name(arg: &str) -> String {
    let name = arg
        .trim_start_matches('-')
        .split([' ', '='])
        .next()
        .unwrap_or_default();
    name.trim_matches(['<', '>', '.'])
        .to_ascii_lowercase()
        .replace('-', "_")
}

/// clap's rendered message without its `error:` prefix, usage block and help hint, on one line.
fn one_line(rendered: &str) -> String {
    rendered
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .map(|l| l.strip_prefix("error: ").unwrap_or(l))
        .fold(String::new(), |mut line, part| {
            if !line.is_empty() {
                // A line ending in a colon introduces the next one; others are separate notes.
                line.push_str(if line.ends_with(':') { " " } else { "; " });
            }
            line.push_str(part);
            line
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argument_names_are_the_fields_they_set() {
        assert_eq!(arg_name("--retry-on <PROVIDER>"), "retry_on");
        assert_eq!(arg_name("--as <VERDICT>"), "as");
        assert_eq!(arg_name("<JOB_ID>"), "job_id");
        assert_eq!(arg_name("--key=<K>"), "key");
    }

    #[test]
    fn messages_lose_their_usage_block() {
        let rendered = "error: unexpected argument '--x' found\n\n  tip: to pass '--x' as a value, use '-- --x'\n\nUsage: onejob job <ID>\n\nFor more information, try '--help'.\n";
        assert_eq!(
            one_line(rendered),
            "unexpected argument '--x' found; tip: to pass '--x' as a value, use '-- --x'"
        );
        let rendered = "error: the following required arguments were not provided:\n  --key <K>\n\nUsage: onejob submit --key <K>\n";
        assert_eq!(
            one_line(rendered),
            "the following required arguments were not provided: --key <K>"
        );
    }
}
