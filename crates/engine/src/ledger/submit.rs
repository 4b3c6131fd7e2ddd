//! `submit` (SPEC §2): one job per (owner, key), decided by the database's unique constraint.

use crate::error::{ConflictDetails, Error, Result};
use crate::intent::{parse_intent, validate_intent, validate_key, validate_owner, ValidIntent};
use crate::model::Submitted;
use crate::store::{contracts as contract_rows, jobs as job_rows, providers as provider_rows};
use crate::Engine;

impl Engine {
    /// Submits an intent given as JSON text. See [`Engine::submit_intent`].
    pub async fn submit(&self, owner: &str, key: &str, intent_json: &str) -> Result<Submitted> {
        validate_owner(owner)?;
        validate_key(key)?;
        let intent = parse_intent(intent_json)?;
        self.submit_valid(owner, key, intent).await
    }

    /// Submits an intent: the first call with a key creates a `queued` job at version 0 and
    /// wakes the executor; a repeat with the same intent returns that job with
    /// `replayed: true` and starts nothing; a repeat with another intent is
    /// `idempotency_conflict` naming the existing job.
    pub async fn submit_intent(
        &self,
        owner: &str,
        key: &str,
        intent: serde_json::Value,
    ) -> Result<Submitted> {
        validate_owner(owner)?;
        validate_key(key)?;
        let intent = validate_intent(intent)?;
        self.submit_valid(owner, key, intent).await
    }

    async fn submit_valid(&self, owner: &str, key: &str, intent: ValidIntent) -> Result<Submitted> {
        let id = uuid::Uuid::now_v7().to_string();
        let new = job_rows::NewJob {
            id: &id,
            owner_id: owner,
            idempotency_key: key,
            fingerprint: &intent.fingerprint,
            intent: &intent.stored,
        };
        // One write transaction: the route and contract are checked where they cannot change
        // before the insert, and nothing is reported before the commit has returned success.
        let mut tx = self.begin().await?;
        if let Some((i, name)) = provider_rows::first_missing(&mut tx, &intent.intent.route).await?
        {
            return Err(Error::invalid_input(
                format!("intent.route.{i}"),
                format!("no provider named {name} is configured"),
            ));
        }
        if let Some(name) = &intent.intent.contract {
            if contract_rows::get(&mut tx, name).await?.is_none() {
                return Err(Error::invalid_input(
                    "intent.contract",
                    format!("no contract named {name} is configured"),
                ));
            }
        }
        // The schema's triggers write the `submitted` event in the same statement.
        let inserted = job_rows::insert_if_new(&mut tx, &new).await?;
        let (job, replayed) = match inserted {
            Some(row) => (row.into_job()?, false),
            None => {
                let existing = job_rows::by_key(&mut tx, owner, key)
                    .await?
                    .ok_or_else(|| Error::internal("the key was taken, yet no job holds it"))?
                    .into_job()?;
                (existing, true)
            }
        };
        tx.commit().await?;
        if !replayed {
            self.wake_executor();
            return Ok(Submitted { job, replayed });
        }
        if job.fingerprint == intent.fingerprint {
            Ok(Submitted { job, replayed })
        } else {
            Err(Error::IdempotencyConflict {
                message: format!(
                    "key {key:?} already belongs to job {} with another intent; use a new key for a new intent",
                    job.id
                ),
                details: ConflictDetails {
                    existing_job_id: job.id,
                },
            })
        }
    }
}
