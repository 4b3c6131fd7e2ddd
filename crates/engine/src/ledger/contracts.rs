//! Contract calls: add, list, check against a provider, and which providers a job may fail
//! over to by itself (SPEC §7, §8).

use std::collections::HashSet;

use crate::store::Handle;
use serde_json::Value;

use crate::contracts::check::{Check, SampleResult};
use crate::contracts::{self, Contract};
use crate::error::{Error, Result};
use crate::input;
use crate::model::OpenJobs;
use crate::store::checks::{self as check_rows, CheckRow};
use crate::store::contracts::{self as contract_rows, ContractRow, Upserted};
use crate::store::{
    attempts as attempt_rows, jobs as job_rows, json_column, providers as provider_rows, Tx,
};
use crate::Engine;

use super::finish;
use super::group::{GroupWrite, Lock, Step};

/// What `add_contract` did.
#[derive(Debug, Clone, PartialEq)]
pub struct AddedContract {
    pub contract: Contract,
    /// A contract of that name existed.
    pub replaced: bool,
    /// Its content changed, so every earlier check of it no longer counts.
    pub changed: bool,
}

impl Engine {
    /// Adds a contract from its JSON, or replaces the one of that name. A change of schema,
    /// template or samples gives it a new hash, and every check made before stops counting.
    pub async fn add_contract(&self, contract_json: &str) -> Result<AddedContract> {
        let new = contracts::parse(contract_json)?;
        let text = |v: &Value| serde_json::to_string(v).map_err(|e| Error::internal(e.to_string()));
        let template = text(&serde_json::json!(new.template))?;
        let (schema, samples) = (
            text(&new.schema)?,
            text(&Value::Array(new.samples.clone()))?,
        );
        let mut tx = self.begin().await?;
        let outcome = async {
            let upserted =
                contract_rows::upsert(&mut tx, &new.name, &schema, &template, &samples, &new.hash)
                    .await?;
            let row = contract_rows::get(&mut tx, &new.name)
                .await?
                .ok_or_else(|| Error::internal("a contract vanished inside its transaction"))?;
            Ok((upserted, row))
        }
        .await;
        let (upserted, row) = finish(tx, outcome).await?;
        Ok(AddedContract {
            contract: into_contract(row)?,
            replaced: upserted != Upserted::Created,
            changed: upserted == Upserted::Changed,
        })
    }

    /// All contracts, by name.
    pub async fn contracts(&self) -> Result<Vec<Contract>> {
        let mut conn = self.read().await?;
        contract_rows::list(&mut conn)
            .await?
            .into_iter()
            .map(into_contract)
            .collect()
    }

    /// One contract by name, or `not_found`.
    pub(crate) async fn contract(&self, name: &str) -> Result<Contract> {
        input::refuse_nul("contract", name)?;
        let mut conn = self.read().await?;
        contract_rows::get(&mut conn, name)
            .await?
            .ok_or_else(|| Error::not_found("contract", name))
            .and_then(into_contract)
    }

    /// Removes a contract and its checks, or `not_found`. Jobs that name it keep the name;
    /// an open one fails `misconfigured` at its next claim, naming the contract, and every
    /// other job goes on (as with a removed provider).
    pub async fn remove_contract(&self, name: &str) -> Result<()> {
        input::refuse_nul("contract", name)?;
        let mut tx = self.begin().await?;
        let outcome = async {
            if !contract_rows::delete(&mut tx, name).await? {
                return Err(Error::not_found("contract", name));
            }
            Ok(check_rows::delete_for_contract(&mut tx, name).await?)
        }
        .await;
        finish(tx, outcome).await
    }

    /// Jobs that are not closed and name this contract, of every owner (contracts are
    /// shared by all owners, so removing one touches them all). Whether the contract exists
    /// does not matter: jobs keep the name after it is removed.
    pub async fn jobs_naming_contract(&self, name: &str) -> Result<OpenJobs> {
        input::refuse_nul("contract", name)?;
        let mut conn = self.read().await?;
        open_jobs(job_rows::open_naming_contract(&mut conn, name).await?)
    }

    /// The last check of a contract against each provider it was checked with.
    pub async fn contract_checks(&self, name: &str) -> Result<Vec<Check>> {
        input::refuse_nul("contract", name)?;
        let mut conn = self.read().await?;
        let contract = contract_rows::get(&mut conn, name)
            .await?
            .ok_or_else(|| Error::not_found("contract", name))
            .and_then(into_contract)?;
        let rows = check_rows::latest_per_provider(&mut conn, name).await?;
        let mut checks = Vec::with_capacity(rows.len());
        for row in rows {
            let provider = provider_rows::get(&mut conn, &row.provider).await?;
            let current = counts(
                &row,
                &contract,
                provider.as_ref().map(|p| p.updated_at.as_str()),
            );
            checks.push(into_check(row, current)?);
        }
        Ok(checks)
    }

    /// Stores a check that was run, and says whether it still counts: the contract or the
    /// provider may have changed while it ran.
    pub(crate) async fn record_check(&self, mut row: CheckRow) -> Result<Check> {
        let mut tx = self.begin().await?;
        let outcome = async {
            // The database stamps the check; what is compared and reported is that time.
            row.checked_at = check_rows::insert(&mut tx, &row).await?;
            // Re-read within the write: the contract or provider may have changed during the
            // check.
            is_current(&mut tx, &row).await
        }
        .await;
        let current = finish(tx, outcome).await?;
        into_check(row, current)
    }

    /// Keeps an AI provider's token usage for an attempt, what it cost (`cost_nanos`, at the
    /// price the attempt was sent at), and the answer's own id as its request id when the
    /// response headers carried none.
    pub(crate) async fn record_usage(
        &self,
        attempt_id: &str,
        answer_id: Option<&str>,
        usage: Option<&Value>,
        cost_nanos: Option<i64>,
    ) -> Result<()> {
        let usage = usage.map(Value::to_string);
        let (attempt_id, answer_id) = (attempt_id.to_owned(), answer_id.map(str::to_owned));
        self.group(RecordUsage {
            attempt_id,
            answer_id,
            usage,
            cost_nanos,
        })
        .await
    }

    /// The token usage recorded for an attempt, if its provider reported one. Only tests call
    /// it (through `testing`).
    #[cfg_attr(not(feature = "testing"), allow(dead_code))]
    pub(crate) async fn attempt_usage(&self, attempt_id: &str) -> Result<Option<Value>> {
        let mut conn = self.read().await?;
        Ok(attempt_rows::usage(&mut conn, attempt_id)
            .await?
            .as_deref()
            .map(json_column))
    }
}

/// [`Engine::record_usage`]'s write.
struct RecordUsage {
    attempt_id: String,
    answer_id: Option<String>,
    usage: Option<String>,
    cost_nanos: Option<i64>,
}

impl GroupWrite for RecordUsage {
    type Out = ();

    fn lock(&self) -> Lock {
        Lock::JobOf(self.attempt_id.clone())
    }

    fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, ()> {
        Box::pin(async move {
            let (answer_id, usage) = (self.answer_id.as_deref(), self.usage.as_deref());
            let cost = self.cost_nanos;
            attempt_rows::record_usage(tx, &self.attempt_id, answer_id, usage, cost).await?;
            Ok(())
        })
    }
}

/// The providers of the intent's route whose last check of its contract passed and is
/// current, read on `conn` (inside the claiming transaction, for the route policy).
pub(super) async fn validated_in(
    conn: &mut impl Handle,
    intent: &crate::intent::Intent,
) -> Result<HashSet<String>> {
    let Some(contract) = &intent.contract else {
        return Ok(HashSet::new());
    };
    let mut validated = HashSet::new();
    for provider in &intent.route {
        if let Some(row) = check_rows::latest(conn, contract, provider).await? {
            if row.passed && is_current(conn, &row).await? {
                validated.insert(provider.clone());
            }
        }
    }
    Ok(validated)
}

/// Whether a check still describes the contract and the provider as they are now.
async fn is_current(conn: &mut impl Handle, row: &CheckRow) -> Result<bool> {
    let Some(contract) = contract_rows::get(conn, &row.contract).await? else {
        return Ok(false);
    };
    let provider = provider_rows::get(conn, &row.provider).await?;
    Ok(counts(
        row,
        &into_contract(contract)?,
        provider.as_ref().map(|p| p.updated_at.as_str()),
    ))
}

/// A check counts when it passed, was made against the contract's current content after it
/// last changed, and against the provider as it is configured now.
fn counts(row: &CheckRow, contract: &Contract, provider_updated_at: Option<&str>) -> bool {
    row.passed
        && row.contract_hash == contract.hash
        && row.checked_at >= contract.updated_at
        && provider_updated_at == Some(row.provider_updated_at.as_str())
}

fn into_contract(row: ContractRow) -> Result<Contract> {
    let unreadable = |e: serde_json::Error| {
        Error::internal(format!("contract {} is stored unreadably: {e}", row.name))
    };
    let template = serde_json::from_str(&row.template).map_err(unreadable)?;
    let samples = serde_json::from_str(&row.samples).map_err(unreadable)?;
    Ok(Contract {
        schema: json_column(&row.schema),
        template,
        samples,
        name: row.name,
        hash: row.hash,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

fn into_check(row: CheckRow, current: bool) -> Result<Check> {
    let samples: Vec<SampleResult> = serde_json::from_str(&row.samples)
        .map_err(|e| Error::internal(format!("check {} is stored unreadably: {e}", row.id)))?;
    Ok(Check {
        id: row.id,
        contract: row.contract,
        contract_hash: row.contract_hash,
        provider: row.provider,
        provider_updated_at: row.provider_updated_at,
        passed: row.passed,
        samples,
        checked_at: row.checked_at,
        current,
    })
}

/// Counts by status, as the store returns them, into [`OpenJobs`].
pub(super) fn open_jobs(counts: Vec<(String, i64)>) -> Result<OpenJobs> {
    let mut open = OpenJobs::default();
    for (status, n) in counts {
        let n = u32::try_from(n).unwrap_or(u32::MAX);
        match status.as_str() {
            "queued" => open.queued = n,
            "running" => open.running = n,
            "unknown" => open.unknown = n,
            other => {
                return Err(Error::internal(format!(
                    "{other} is not an open job status"
                )))
            }
        }
    }
    Ok(open)
}
