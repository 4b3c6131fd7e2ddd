//! `onejob bulk resolve|cancel|retry`: a person's action on every job a filter matches (SPEC
//! §16), with its progress on stderr as one JSON line per batch.

use std::io::Write;

use clap::{Args, ValueEnum};
use onejob_engine::bulk::generated_key;
use onejob_engine::{BulkAction, BulkRequest, Engine, Error, Result};
use serde_json::{json, Value};

use crate::args::{FilterArgs, VerdictArg};

#[derive(Debug, Args)]
#[command(
    after_help = "The set of jobs is fixed when the operation starts: a job that matches later is not touched. \
Each job is changed as the single action would change it; one that moved meanwhile is skipped with the \
error code that action gives. Prints {\"bulk\": {\"id\", \"key\", \"matched\", \"changed\", \"skipped\": \
[{\"job_id\", \"code\"}], \"done\"}, \"replayed\"} on stdout; on stderr, {\"bulk_started\": …} first (with \
the key, generated when --key is not given) and {\"bulk_progress\": …} after each batch. The same command \
with the same --key, after a crash or a lost answer, finishes what is left and changes nothing twice.",
    mut_arg("status", |status| status.help(
        "Only jobs in this status [resolve: unknown, the only one it applies to]"
    ))
)]
pub struct BulkArgs {
    /// What to do to each job: resolve its unknown attempt (--as), cancel it, or retry it
    #[arg(value_name = "ACTION")]
    pub action: ActionArg,
    /// With resolve: the verdict on each job's unknown attempt
    #[arg(long = "as", value_name = "VERDICT")]
    pub verdict: Option<VerdictArg>,
    #[command(flatten)]
    pub filter: FilterArgs,
    /// With retry: the provider to retry each job at [default: where its last attempt ran]
    #[arg(long, value_name = "PROVIDER")]
    pub retry_on: Option<String>,
    /// Count what would match; change and record nothing
    #[arg(long)]
    pub dry_run: bool,
    /// The operation's idempotency key; the same key again finishes the same operation
    /// [default: a new one, given in the answer]
    #[arg(long, value_name = "K")]
    pub key: Option<String>,
}

/// The action, as spelled on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum ActionArg {
    /// Resolve each job's unknown attempt with --as
    Resolve,
    /// Cancel each job
    Cancel,
    /// Start each job's next attempt
    Retry,
}

impl BulkArgs {
    /// The request the engine takes.
    fn request(&self) -> BulkRequest {
        BulkRequest {
            action: match self.action {
                ActionArg::Resolve => BulkAction::Resolve,
                ActionArg::Cancel => BulkAction::Cancel,
                ActionArg::Retry => BulkAction::Retry,
            },
            filter: self.filter.clone().into(),
            verdict: self.verdict.map(Into::into),
            provider: self.retry_on.clone(),
            dry_run: self.dry_run,
        }
    }
}

/// Starts (or finds under its key) the operation, runs it to its end with progress on
/// stderr, and answers it.
pub async fn run(engine: &Engine, owner: &str, args: BulkArgs) -> Result<Value> {
    let request = args.request();
    let key = args.key.clone().unwrap_or_else(generated_key);
    let started = engine.bulk_start(owner, &key, &request).await?;
    let Some(id) = started.operation.id.clone() else {
        return answer(started.operation, false);
    };
    line(json!({ "bulk_started": {
        "id": id,
        "key": key,
        "matched": started.operation.matched,
        "replayed": started.replayed,
    }}));
    let operation = engine
        .bulk_run(owner, &id, |p| {
            line(json!({ "bulk_progress": {
                "id": id,
                "matched": p.matched,
                "decided": p.decided,
                "changed": p.changed,
                "skipped": p.skipped,
            }}));
        })
        .await?;
    answer(operation, started.replayed)
}

fn answer(operation: onejob_engine::BulkOperation, replayed: bool) -> Result<Value> {
    let bulk = serde_json::to_value(operation)
        .map_err(|e| Error::internal(format!("cannot serialise the reply: {e}")))?;
    Ok(json!({ "bulk": bulk, "replayed": replayed }))
}

/// One progress line on stderr; a closed stderr stops no operation.
fn line(doc: Value) {
    let _ = writeln!(std::io::stderr().lock(), "{doc}");
}
