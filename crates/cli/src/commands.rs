//! One engine call per subcommand; each returns the JSON document the subcommand prints.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use onejob_engine::executor::{Executor, ExecutorOptions, Reconciled};
use onejob_engine::intent::check_depth;
use onejob_engine::sandbox::{Dials, Sandbox};
use onejob_engine::{Engine, Error, JobsQuery, Resolution, Result};
use serde::Serialize;
use serde_json::{json, Value};

use crate::args::{
    BudgetCommand, Cli, Command, ProviderCommand, SandboxArgs, Submit, TokenCommand,
};
use crate::output::Reply;
use crate::signals::Signals;
use crate::{wait, worker};

/// Runs the parsed command line. Files and JSON arguments are read before the database is
/// opened, so a bad argument leaves no trace.
pub async fn run(cli: Cli) -> Result<Reply> {
    let db = database(cli.global.db)?;
    let owner = cli.global.owner;
    match cli.command {
        Command::Submit(submit) => run_submit(&db, &owner, submit).await,
        Command::Worker(args) => with_engine(&db, async |engine| {
            worker::run(engine, args.once, args.concurrency).await
        })
        .await
        .map(Reply::from),
        Command::Sandbox(sandbox) => run_sandbox(sandbox).await.map(Reply::from),
        Command::Serve(args) => {
            crate::serve::check(&args)?;
            with_engine(&db, async |engine| crate::serve::run(engine, args).await)
                .await
                .map(Reply::from)
        }
        Command::Contract(command) => {
            let call = command.read(read_text)?;
            let run = async |engine: &Engine| crate::contract::run(engine, call).await;
            let (doc, code) = with_engine(&db, run).await?;
            Ok(Reply { doc, code })
        }
        Command::Doctor => with_engine(&db, doctor).await,
        command => run_once(&db, &owner, command).await.map(Reply::from),
    }
}

/// `submit`, and with `--wait` the executor until the job ends.
async fn run_submit(db: &Path, owner: &str, submit: Submit) -> Result<Reply> {
    if submit.timeout_s.is_some() && !submit.wait {
        return Err(Error::invalid_input(
            "timeout_s",
            "--timeout-s limits --wait; give --wait with it",
        ));
    }
    let intent = read_text("intent", &submit.intent)?;
    with_engine(db, async |engine| {
        if submit.wait {
            let timeout = submit.timeout_s;
            return wait::submit_and_wait(engine, owner, &submit.key, &intent, timeout).await;
        }
        // The raw text goes to the engine, which checks its depth before parsing it.
        to_json(engine.submit(owner, &submit.key, &intent).await?).map(Reply::from)
    })
    .await
}

/// The subcommands that make one call and print its answer.
async fn run_once(db: &Path, owner: &str, command: Command) -> Result<Value> {
    match command {
        Command::Job { id } => {
            with_engine(db, async |engine| to_json(engine.job(owner, &id).await?)).await
        }
        Command::Jobs(jobs) => {
            let query = JobsQuery {
                after: jobs.after,
                limit: jobs.limit,
                ..JobsQuery::matching(jobs.filter.into())
            };
            with_engine(db, async |engine| {
                to_json(engine.jobs(owner, &query).await?)
            })
            .await
        }
        Command::Retry {
            job_id,
            provider,
            key,
        } => {
            with_engine(db, async |engine| match &key {
                None => to_json(engine.retry(owner, &job_id, provider.as_deref()).await?),
                Some(key) => {
                    let retried = engine
                        .retry_keyed(owner, key, &job_id, provider.as_deref())
                        .await?;
                    let mut reply = to_json(retried.done)?;
                    reply["replayed"] = Value::Bool(retried.replayed);
                    Ok(reply)
                }
            })
            .await
        }
        Command::Resolve(resolve) => {
            let result = match &resolve.result {
                Some(arg) => Some(read_json("result", arg)?),
                None => None,
            };
            let resolution = Resolution {
                result,
                note: resolve.note,
                retry_on: resolve.retry_on,
            };
            with_engine(db, async |engine| {
                let verdict = resolve.verdict.into();
                let done = engine
                    .resolve(owner, &resolve.attempt_id, verdict, resolution)
                    .await?;
                to_json(done)
            })
            .await
        }
        Command::Bulk(args) => {
            with_engine(db, async |engine| {
                crate::bulk::run(engine, owner, args).await
            })
            .await
        }
        Command::Budget(BudgetCommand::Set { name, json }) => {
            let config = read_text("budget", &json)?;
            with_engine(db, async |engine| {
                let (budget, replaced) = engine.set_budget(&name, &config, None).await?;
                Ok(json!({ "budget": budget, "replaced": replaced }))
            })
            .await
        }
        Command::Budget(BudgetCommand::List) => {
            with_engine(db, async |engine| {
                Ok(json!({ "budgets": engine.budgets(None).await? }))
            })
            .await
        }
        Command::Budget(BudgetCommand::Remove { name }) => {
            with_engine(db, async |engine| {
                engine.remove_budget(&name, None).await?;
                Ok(json!({ "removed": name }))
            })
            .await
        }
        Command::Spend(spend) => {
            let by = spend.by.into();
            with_engine(db, async |engine| {
                let spend = engine
                    .spend(None, by, spend.since, spend.currency.as_deref())
                    .await?;
                Ok(spend.answer())
            })
            .await
        }
        Command::Cancel { job_id } => {
            with_engine(db, async |engine| {
                Ok(json!({ "job": engine.cancel(owner, &job_id).await? }))
            })
            .await
        }
        Command::Reconcile { attempt_id } => {
            with_engine(db, async |engine| {
                reconcile(engine, owner, &attempt_id).await
            })
            .await
        }
        Command::Provider(ProviderCommand::Add { json }) => {
            // Named as the engine names the provider's configuration in its own errors.
            let config = read_text("provider", &json)?;
            with_engine(db, async |engine| {
                let (provider, replaced) = engine.add_provider(&config).await?;
                Ok(json!({ "provider": provider, "replaced": replaced }))
            })
            .await
        }
        Command::Provider(ProviderCommand::List) => {
            with_engine(db, async |engine| {
                let mut providers = Vec::new();
                for provider in engine.providers().await? {
                    // Where its key comes from, never the key.
                    let key = engine.key_status(&provider.config.name).await?;
                    let mut doc = to_json(provider)?;
                    if let Some(fields) = doc.as_object_mut() {
                        fields.insert("key".to_owned(), to_json(key)?);
                    }
                    providers.push(doc);
                }
                Ok(json!({ "providers": providers }))
            })
            .await
        }
        Command::Provider(ProviderCommand::Key(command)) => {
            crate::keys::check_args(&command)?;
            with_engine(db, async |engine| crate::keys::run(engine, command).await).await
        }
        Command::Provider(ProviderCommand::Remove { name }) => {
            with_engine(db, async |engine| {
                // Counted first: once it is removed, these are the jobs that named it.
                let open_jobs = engine.jobs_naming_provider(&name).await?;
                engine.remove_provider(&name).await?;
                Ok(json!({ "removed": name, "open_jobs": open_jobs }))
            })
            .await
        }
        Command::Token(TokenCommand::Create { name }) => {
            with_engine(db, async |engine| {
                let (token, info) = engine.create_token(owner, name.as_deref()).await?;
                let mut doc = to_json(info)?;
                if let Some(fields) = doc.as_object_mut() {
                    fields.insert("token".to_owned(), Value::String(token));
                }
                Ok(doc)
            })
            .await
        }
        Command::Token(TokenCommand::List) => {
            with_engine(db, async |engine| {
                Ok(json!({ "tokens": engine.tokens().await? }))
            })
            .await
        }
        Command::Token(TokenCommand::Revoke { id }) => {
            with_engine(db, async |engine| {
                Ok(json!({ "token": engine.revoke_token(&id).await? }))
            })
            .await
        }
        Command::Submit(_)
        | Command::Worker(_)
        | Command::Sandbox(_)
        | Command::Contract(_)
        | Command::Doctor
        | Command::Serve(_) => Err(Error::internal(
            "a subcommand with its own dispatcher reached the one-call dispatcher",
        )),
    }
}

/// `doctor`'s exit code when it names a risk; the document is printed either way.
pub const RISKS_FOUND: u8 = 14;

/// The ledger in use and the risks on it; exit 0 when there are none, else [`RISKS_FOUND`].
async fn doctor(engine: &Engine) -> Result<Reply> {
    let diagnosis = engine.doctor().await?;
    let code = match diagnosis.risks.is_empty() {
        true => 0,
        false => RISKS_FOUND,
    };
    Ok(Reply {
        doc: to_json(diagnosis)?,
        code,
    })
}

/// Looks up the owner's `unknown` attempt at its provider's status URL; the job and attempt
/// as they stand afterwards, and what the lookup said.
async fn reconcile(engine: &Engine, owner: &str, attempt_id: &str) -> Result<Value> {
    // Read through the owner first, so another owner's attempt is not_found.
    let attempt = engine.attempt(owner, attempt_id).await?;
    let executor = Executor::new(engine.clone(), ExecutorOptions::default())?;
    let (outcome, due_in) = match executor.reconcile(&attempt).await? {
        Reconciled::Completed(_) => ("completed", None),
        Reconciled::Failed(_) => ("failed", None),
        Reconciled::StillUnknown => ("still_unknown", None),
        Reconciled::TooEarly(wait) => ("too_early", Some(wait)),
    };
    let job = engine.job(owner, &attempt.job_id).await?.job;
    let attempt = engine.attempt(owner, attempt_id).await?;
    let mut reply = json!({ "job": job, "attempt": attempt, "outcome": outcome });
    if let Some(wait) = due_in {
        // Not asked yet: the request may still be answered; the person may ask again then.
        reply["due_in_ms"] = json!(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
    }
    Ok(reply)
}

/// Runs the sandbox in the foreground: prints its url once it listens, serves until SIGINT or
/// SIGTERM, then returns a summary as the closing line.
async fn run_sandbox(args: SandboxArgs) -> Result<Value> {
    let dials = match &args.dials {
        Some(arg) => Dials::parse(&read_text("dials", arg)?)?,
        None => Dials::default(),
    };
    // Handlers go in before the url is printed, so a script may signal as soon as it reads it.
    let signals = Signals::listen()?;
    let sandbox = Sandbox::start(args.listen, dials).await?;
    let url = sandbox.url();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", json!({ "sandbox": { "url": url } }))
        .and_then(|()| out.flush())
        .map_err(|e| Error::internal(format!("cannot write to stdout: {e}")))?;
    drop(out);
    signals.received(1).await;
    let requests = sandbox.log().len();
    sandbox.stop().await;
    Ok(json!({ "sandbox": { "url": url, "stopped": true, "requests": requests } }))
}

/// Opens the ledger, runs one call, and closes the ledger whatever the call returned, so the
/// WAL is checkpointed before the process exits.
async fn with_engine<T>(db: &Path, call: impl AsyncFnOnce(&Engine) -> Result<T>) -> Result<T> {
    let engine = Engine::open(db).await?;
    let out = call(&engine).await;
    engine.close().await;
    out
}

/// `--db`, else `ONEJOB_DB`, else the desktop app's database; never the empty path, which
/// SQLite would take for a throwaway database.
fn database(db: PathBuf) -> Result<PathBuf> {
    if db.as_os_str().is_empty() {
        Err(Error::invalid_input("db", "must be a file path, not empty"))
    } else {
        Ok(db)
    }
}

/// The most an argument may hold, in bytes: an intent, a person's result, a provider's or
/// a contract's configuration, the sandbox's dials. It is the engine's limit on an intent
/// (SPEC §2); a provider or a contract is far smaller than that in practice.
const MAX_ARGUMENT_BYTES: usize = onejob_engine::intent::MAX_INTENT_BYTES;

/// An argument given inline, or as `@FILE`, or as `@-` for stdin. A file or stdin is read
/// up to the limit plus one byte, never whole, so `@/dev/zero` is refused at once.
fn read_text(field: &str, arg: &str) -> Result<String> {
    let Some(source) = arg.strip_prefix('@') else {
        if arg.len() > MAX_ARGUMENT_BYTES {
            return Err(too_large(field));
        }
        return Ok(arg.to_owned());
    };
    let from = if source == "-" { "stdin" } else { source };
    let cannot_read =
        |why: String| Error::invalid_input(field, format!("cannot read {from}: {why}"));
    let limit = u64::try_from(MAX_ARGUMENT_BYTES)
        .map_err(|e| Error::internal(e.to_string()))?
        .saturating_add(1);
    let mut bytes = Vec::new();
    let read = if source == "-" {
        std::io::stdin().lock().take(limit).read_to_end(&mut bytes)
    } else {
        std::fs::File::open(source).and_then(|file| file.take(limit).read_to_end(&mut bytes))
    };
    read.map_err(|e| cannot_read(e.to_string()))?;
    if bytes.len() > MAX_ARGUMENT_BYTES {
        return Err(too_large(field));
    }
    String::from_utf8(bytes).map_err(|_| cannot_read("it is not UTF-8 text".to_owned()))
}

fn too_large(field: &str) -> Error {
    Error::invalid_input(
        field,
        format!("is larger than {MAX_ARGUMENT_BYTES} bytes (1 MiB), the limit"),
    )
}

/// A JSON argument (inline or `@FILE`), its depth checked before it is parsed.
fn read_json(field: &str, arg: &str) -> Result<Value> {
    let text = read_text(field, arg)?;
    check_depth(&text, field)?;
    serde_json::from_str(&text)
        .map_err(|e| Error::invalid_input(field, format!("not valid JSON ({e})")))
}

fn to_json(value: impl Serialize) -> Result<Value> {
    serde_json::to_value(value)
        .map_err(|e| Error::internal(format!("cannot serialise the reply: {e}")))
}
