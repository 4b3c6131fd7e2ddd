//! The command line as clap types: global options, subcommands and their flags.

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{Args, Parser, Subcommand, ValueEnum};
use onejob_engine::{default_db_path, BulkFilter, JobStatus, Verdict, APP_IDENTIFIER};

/// Exactly one result per intent: submit jobs to paid providers and get one answer each,
/// however often you click and however the network behaves.
#[derive(Debug, Parser)]
#[command(
    name = "onejob",
    version,
    long_about = long_about(),
    after_help = "Output is one JSON document on stdout. Errors are {\"error\": {\"code\", \"message\", \"details\"}} on stderr, \
with exit code 2 invalid_input, 3 idempotency_conflict, 4 attempt_blocked or invalid_transition, \
5 not_found, 6 fallback_not_validated, 1 storage, provider or internal. \
`submit --wait` prints the job in every case and exits 0 when it succeeded, 10 when it failed or was cancelled, \
11 when its outcome is unknown, 12 when --timeout-s ran out first. `doctor` exits 14 when it names a risk."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// The top-level `--help` text: what onejob is, and where the database it shares with the
/// desktop app is on this machine, so whoever installed both knows they see the same jobs.
fn long_about() -> String {
    format!(
        "Exactly one result per intent: submit jobs to paid providers and get one answer each, \
however often you click and however the network behaves.\n\n\
The command line and the desktop app (onejob-app) share one database: \
$XDG_DATA_HOME/{APP_IDENTIFIER}/onejob.db (~/.local/share/{APP_IDENTIFIER}/onejob.db when \
XDG_DATA_HOME is unset), here {}. --db or ONEJOB_DB chooses another file, or a \
postgres://user@host/database URL for a ledger shared by a team (the password goes in \
~/.pgpass or PGPASSWORD).",
        default_db_path().display()
    )
}

/// Options every subcommand accepts.
#[derive(Debug, Args)]
#[command(next_help_heading = "Global options")]
pub struct Global {
    /// The ledger: a database file, or a postgres:// URL for a ledger shared by a team; the
    /// default is the desktop app's database ($XDG_DATA_HOME/dev.onejob.app/onejob.db)
    #[arg(
        long,
        env = "ONEJOB_DB",
        // A URL may carry a password: help never shows the variable's value.
        hide_env_values = true,
        value_name = "PATH|URL",
        default_value_os_t = default_db_path(),
        global = true
    )]
    pub db: PathBuf,
    /// Whose jobs to act on; another owner's jobs are not found
    #[arg(
        long,
        env = "ONEJOB_OWNER",
        value_name = "ID",
        default_value = "local",
        global = true
    )]
    pub owner: String,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Submit an intent under an idempotency key; a repeat with the same intent returns the same job; --wait runs it
    Submit(Submit),
    /// Show a job with its attempts and event history
    Job {
        /// The job's id
        id: String,
    },
    /// List jobs, newest first, one page at a time
    Jobs(Jobs),
    /// Start the job's next attempt now (a failed job is reopened first)
    Retry {
        /// The job's id
        job_id: String,
        /// Run the attempt at this provider [default: where the last attempt ran, else the route's primary]
        #[arg(long, value_name = "NAME")]
        provider: Option<String>,
        /// An idempotency key for this retry: the same key again answers the attempt its first
        /// retry started and starts nothing (the answer says "replayed": true)
        #[arg(long, value_name = "K")]
        key: Option<String>,
    },
    /// Give a person's verdict on an attempt: it went through, it did not happen, or stop waiting
    Resolve(Resolve),
    /// Cancel a job; no attempt may start afterwards, and a late answer is flagged for review
    Cancel {
        /// The job's id
        job_id: String,
    },
    /// Resolve, cancel or retry every job a filter matches, in one keyed operation
    Bulk(crate::bulk::BulkArgs),
    /// Limits on what attempts may spend in a day or a month: an attempt that would pass one is not sent, and its job waits for the next period
    #[command(subcommand)]
    Budget(BudgetCommand),
    /// What attempts cost, by day, provider or owner, and the money at risk in unknown ones; of every owner's jobs in this ledger
    Spend(SpendArgs),
    /// Configure the providers jobs are sent to
    #[command(subcommand)]
    Provider(ProviderCommand),
    /// Output contracts an AI provider's answers must keep, and checks of providers against them
    #[command(subcommand)]
    Contract(crate::contract::ContractCommand),
    /// API tokens of the HTTP API: each acts as one owner; the ledger keeps only its SHA-256
    #[command(subcommand)]
    Token(TokenCommand),
    /// Look up an unknown attempt at its provider's status URL: completed, failed, or still unknown
    #[command(
        after_help = "Prints {\"job\", \"attempt\", \"outcome\"} as they stand after the lookup. \
\"completed\": the provider did the work and its result went through the compare-and-swap (the attempt is \
succeeded, or lost when another answer had already won). \"failed\": the provider says it did not happen; the \
attempt is failed and the job may continue. \"still_unknown\": the provider cannot tell yet; nothing changed."
    )]
    Reconcile {
        /// The attempt's id; it must be unknown, at a provider that declares a status_url
        attempt_id: String,
    },
    /// Run the executor headless: send queued jobs, from this process or any other, until interrupted
    Worker(WorkerArgs),
    /// Run the sandbox provider on loopback until interrupted; prints {"sandbox": {"url"}} once it listens
    Sandbox(SandboxArgs),
    /// Serve the HTTP API (jobs, events, OpenAPI) on this ledger, with the executor unless --no-worker
    Serve(ServeArgs),
    /// Describe the ledger in use (backend, location, version; on PostgreSQL its replication and clock skew) and name what weakens the promise on it
    #[command(
        after_help = "Prints {\"ledger\": {\"backend\", \"location\", \"server_version\", \"sqlite\": {\"journal_mode\", \"synchronous\"} | \
\"postgres\": {\"connected_to\", \"primary\", \"standbys\": [{\"application_name\", \"client_addr\", \"state\", \"sync_state\"}], \
\"synchronous_commit\", \"synchronous_standby_names\", \"clock_skew_ms\"}}, \"risks\": [{\"code\", \"what\", \"why\", \"what_to_do\"}]}; \
the location never carries a password. Named risks: standbys none of which is synchronous (a failover can lose acknowledged \
jobs and send attempts twice), synchronous_commit below on, synchronous standbys named but none connected, standbys whose \
state the role cannot see, a server that is a standby, a clock more than 1 s off the server's, and a SQLite file not in WAL \
mode or not synchronous full. Exit 0 when no risk is found, 14 when any is (the document is printed either way)."
    )]
    Doctor,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Prints {\"listening\": \"http://ADDR\"} once it accepts connections, with \"risks\": [{\"code\", \"what\", \
\"why\", \"what_to_do\"}] when the ledger has any (as `onejob doctor` names them: a server with standbys none of which is \
synchronous can lose acknowledged jobs and send attempts twice in a failover). Every request carries \
Authorization: Bearer TOKEN (see `onejob token create`). SIGINT or SIGTERM stops accepting, answers the requests in \
hand, lets the executor's attempts in flight end, and exits 0 printing {\"served\": {\"stopped\": true, …}}; a \
second signal stops at once."
)]
pub struct ServeArgs {
    /// The address to listen on; port 0 picks a free one. An address beyond loopback needs
    /// --tls-cert and --tls-key, or --plain-http-behind-proxy
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787")]
    pub listen: SocketAddr,
    /// Serve the API only; another process runs the executor
    #[arg(long)]
    pub no_worker: bool,
    /// The PEM certificate chain to serve HTTPS with
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub tls_cert: Option<PathBuf>,
    /// The PEM private key of --tls-cert
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub tls_key: Option<PathBuf>,
    /// Serve plain HTTP beyond loopback: a proxy in front ends TLS, so tokens never cross a
    /// network in clear
    #[arg(long, conflicts_with = "tls_cert")]
    pub plain_http_behind_proxy: bool,
    /// Connections served at once (1 to 65536); one more is answered 503 at once, and one
    /// token holds at most a quarter of them in event streams and waits
    #[arg(long, value_name = "N", default_value_t = 512)]
    pub max_connections: usize,
    /// How many attempts the executor keeps in flight at once, 1 to 1024
    #[arg(long, value_name = "N", default_value_t = onejob_engine::executor::DEFAULT_MAX_IN_FLIGHT)]
    pub concurrency: usize,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Jobs submitted by other processes on the same database are picked up within a second. \
SIGINT or SIGTERM stops it once the attempts it sent have ended (answer or hard deadline); \
a second signal stops it at once, and what was in flight becomes unknown when its lease expires. \
It prints {\"worker\": {\"id\", \"stopped\": true, \"forced\"}} when it ends; the attempts it sent carry its id as executor_id."
)]
pub struct WorkerArgs {
    /// Return when nothing is left to send and every connection it holds has ended (answer or
    /// hard deadline); a signal stops it at once
    #[arg(long)]
    pub once: bool,
    /// How many attempts it keeps in flight at once, 1 to 1024 (default 32): with a provider
    /// that takes a second, about N jobs a second
    #[arg(long, value_name = "N", default_value_t = onejob_engine::executor::DEFAULT_MAX_IN_FLIGHT)]
    pub concurrency: usize,
}

#[derive(Debug, Args)]
pub struct SandboxArgs {
    /// The loopback address to listen on; port 0 picks a free one (read it from the printed url)
    #[arg(long, value_name = "127.0.0.1:PORT")]
    pub listen: SocketAddr,
    /// The fault dials as JSON, or @FILE (@- reads stdin): {"latency_ms", "jitter_ms",
    /// "never_answer", "drop_after_processing", "server_error", "throttle", "retry_after_s",
    /// "malformed_json", "extra_key", "slow_work", "slow_work_ms", "honour_idempotency_key"};
    /// omitted dials keep their defaults
    #[arg(long, value_name = "JSON|@FILE")]
    pub dials: Option<String>,
}

#[derive(Debug, Args)]
#[command(
    after_help = "Prints {\"job\", \"replayed\"}. With --wait the job is printed as the wait left it, the reason \
in job.error.code when it did not succeed (its own error, \"unknown\" or \"wait_timeout\"); exit 0 succeeded, \
10 failed or cancelled, 11 unknown, 12 --timeout-s ran out. An unknown job must be resolved or reconciled \
before another attempt. A progress line is shown on stderr when it is a terminal."
)]
pub struct Submit {
    /// The idempotency key: one per intent, kept for every repeat (1-255 printable ASCII characters)
    #[arg(long, value_name = "K", allow_hyphen_values = true)]
    pub key: String,
    /// The intent as JSON, or @FILE to read it from a file (@- reads stdin), at most 1 MiB:
    /// {"route": [providers…], "input": …, "contract"?, "params"?, "max_attempts"?}
    #[arg(long, value_name = "JSON|@FILE")]
    pub intent: String,
    /// Run the executor until the job ends: exit 0 succeeded, 10 failed or cancelled, 11
    /// unknown (as soon as it is, not at the hard deadline); the job is printed in every case
    #[arg(long)]
    pub wait: bool,
    /// With --wait: stop waiting after N seconds and exit 12, the job as it stands with
    /// error.code "wait_timeout"
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub timeout_s: Option<u64>,
}

#[derive(Debug, Args)]
pub struct Jobs {
    #[command(flatten)]
    pub filter: FilterArgs,
    /// At most this many jobs (1-1000) [default: 50]
    #[arg(long, value_name = "N")]
    pub limit: Option<u32>,
    /// Continue after this cursor: the `next` of the previous page
    #[arg(long, value_name = "CURSOR")]
    pub after: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum BudgetCommand {
    /// Set a budget, or replace the one of the same name
    Set {
        /// The budget's name: 1-64 characters of A-Z a-z 0-9 . _ -
        name: String,
        /// The budget as JSON, or @FILE (@- reads stdin): {"limit": "10.00", "currency": "USD",
        /// "period": "day"|"month", "provider"?, "owner"?}; without provider or owner it covers
        /// every provider, or every owner's jobs
        #[arg(long, value_name = "JSON|@FILE")]
        json: String,
    },
    /// List the budgets, each with what it holds in its period now
    List,
    /// Remove a budget
    Remove {
        /// The budget's name
        name: String,
    },
}

#[derive(Debug, Args)]
pub struct SpendArgs {
    /// Sum by the day each attempt was sent (UTC), by provider, or by owner
    #[arg(long, value_enum, default_value_t = SpendByArg::Day)]
    pub by: SpendByArg,
    /// Only attempts sent at or after this time (RFC 3339, or a date for its midnight UTC)
    #[arg(long, value_name = "DATE")]
    pub since: Option<String>,
    /// Only attempts charged in this currency; needed where attempts were charged in several
    #[arg(long, value_name = "CODE")]
    pub currency: Option<String>,
}

/// What `onejob spend` sums by.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SpendByArg {
    Day,
    Provider,
    Owner,
}

impl From<SpendByArg> for onejob_engine::SpendBy {
    fn from(by: SpendByArg) -> Self {
        match by {
            SpendByArg::Day => onejob_engine::SpendBy::Day,
            SpendByArg::Provider => onejob_engine::SpendBy::Provider,
            SpendByArg::Owner => onejob_engine::SpendBy::Owner,
        }
    }
}

/// Which jobs: the filter the jobs list and a bulk operation share (SPEC §16).
#[derive(Debug, Clone, Args)]
pub struct FilterArgs {
    /// Only jobs whose route names this provider, or that ran an attempt at it
    #[arg(long, value_name = "NAME")]
    pub provider: Option<String>,
    /// Only jobs in this status
    #[arg(long, value_name = "S", value_parser = status_parser())]
    pub status: Option<JobStatus>,
    /// Only jobs whose open attempt has this error kind (soft_timeout, connection_broken, lease_expired, …)
    #[arg(long, value_name = "K")]
    pub error_kind: Option<String>,
    /// Only jobs created before this time (RFC 3339, or a date YYYY-MM-DD)
    #[arg(long, value_name = "T")]
    pub created_before: Option<String>,
    /// Only jobs created after this time (RFC 3339, or a date YYYY-MM-DD)
    #[arg(long, value_name = "T")]
    pub created_after: Option<String>,
    /// Only jobs whose idempotency key starts with TEXT (case-sensitive), or whose id does
    /// (any case); at most 255 characters
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub search: Option<String>,
}

impl From<FilterArgs> for BulkFilter {
    fn from(args: FilterArgs) -> Self {
        BulkFilter {
            status: args.status,
            provider: args.provider,
            error_kind: args.error_kind,
            created_before: args.created_before,
            created_after: args.created_after,
            search: args.search,
        }
    }
}

#[derive(Debug, Args)]
pub struct Resolve {
    /// The attempt's id
    pub attempt_id: String,
    /// The verdict
    #[arg(long = "as", value_name = "VERDICT")]
    pub verdict: VerdictArg,
    /// With --as succeeded: the result to record, as JSON or @FILE (@- reads stdin), at most 1 MiB
    #[arg(long, value_name = "JSON|@FILE", allow_hyphen_values = true)]
    pub result: Option<String>,
    /// A note kept in the job's history
    #[arg(long, value_name = "TEXT", allow_hyphen_values = true)]
    pub note: Option<String>,
    /// With --as failed or abandoned: create the next attempt on this provider in the same step
    #[arg(long, value_name = "PROVIDER")]
    pub retry_on: Option<String>,
}

/// A person's verdict, as spelled on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum VerdictArg {
    /// It went through: the result claims the job, unless another answer already has
    Succeeded,
    /// It did not happen: the attempt is failed and the job may continue
    Failed,
    /// Stop waiting and allow a new attempt; a late answer may still win
    Abandoned,
}

impl From<VerdictArg> for Verdict {
    fn from(arg: VerdictArg) -> Self {
        match arg {
            VerdictArg::Succeeded => Verdict::Succeeded,
            VerdictArg::Failed => Verdict::Failed,
            VerdictArg::Abandoned => Verdict::Abandoned,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Make a token for the owner given by --owner; prints {"token", "id", …} once: the token
    /// is stored nowhere and cannot be shown again
    Create {
        /// A label to tell the token apart in `token list` (1-128 characters)
        #[arg(long, value_name = "TEXT")]
        name: Option<String>,
    },
    /// List every token of every owner: id, owner, name, created, last used, revoked; never
    /// the token
    List,
    /// Revoke a token for good; requests carrying it are refused from then on
    Revoke {
        /// The token's id (from `token create` or `token list`)
        id: String,
    },
}

#[derive(Debug, Subcommand)]
pub enum ProviderCommand {
    /// Add a provider, or replace the one of the same name
    Add {
        /// The provider as JSON, or @FILE (@- reads stdin): {"name", "kind", "base_url",
        /// "soft_timeout_ms", "hard_timeout_ms", "honours_idempotency_key", "key_retention_s"?,
        /// …}; "key_retention_s" is how long a provider that honours keys remembers one (Stripe:
        /// 86400), and lets the executor replay its unknown attempts under their key; API keys
        /// are named by "api_key_env", never given
        #[arg(long, value_name = "JSON|@FILE")]
        json: String,
    },
    /// List the configured providers
    List,
    /// Remove a provider and its API key in the OS keyring; jobs and attempts that name it
    /// keep the name, and an open job whose route names it fails "misconfigured" when it next
    /// needs it. Prints {"removed", "open_jobs": {"queued", "running", "unknown"}}: the open
    /// jobs that named it, of every owner
    Remove {
        /// The provider's name
        name: String,
    },
    /// A provider's API key in the OS keyring (Secret Service, Keychain, Credential Manager)
    #[command(subcommand)]
    Key(KeyCommand),
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Store a provider's API key in the OS keyring, read from standard input (not echoed at a
    /// terminal; one trailing newline is dropped)
    #[command(
        after_help = "Prints {\"provider\", \"key\": {\"source\": \"env\"|\"keyring\"|\"not_set\", …}}. \
The key is never an argument: arguments are seen by other users' process listings and kept in shell history. \
The environment variable named by the provider's api_key_env, when set, still wins over the keyring."
    )]
    Set {
        /// The provider's name
        name: String,
        /// Anything after the name (a key given by mistake): refused without being repeated
        #[arg(
            hide = true,
            num_args = 0..,
            trailing_var_arg = true,
            allow_hyphen_values = true
        )]
        extra: Vec<String>,
    },
    /// Remove a provider's API key from the OS keyring; done already when there is none
    Clear {
        /// The provider's name
        name: String,
    },
}

/// The job statuses, spelled as the engine spells them.
pub fn status_parser() -> impl TypedValueParser<Value = JobStatus> {
    PossibleValuesParser::new(JobStatus::ALL.map(JobStatus::as_str))
        .try_map(|s| s.parse::<JobStatus>())
}
