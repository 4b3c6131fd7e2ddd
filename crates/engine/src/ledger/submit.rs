//! `submit` (SPEC §2): one job per (owner, key), decided by the database's unique constraint.

use sqlx::SqliteConnection;

use crate::error::{ConflictDetails, Error, Result};
use crate::intent::{parse_intent, validate_intent, validate_key, validate_owner, ValidIntent};
use crate::model::Submitted;
use crate::store::{jobs as job_rows, providers as provider_rows};
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
        let mut conn = self.writer.acquire().await?;
        // One statement: its triggers check the route and write the `submitted` event.
        match job_rows::insert_if_new(&mut conn, &new).await {
            Ok(Some(row)) => {
                drop(conn);
                self.wake_executor();
                return Ok(Submitted {
                    job: row.into_job()?,
                    replayed: false,
                });
            }
            Ok(None) => {}
            Err(sqlx::Error::Database(e)) if e.message().contains("intent.route") => {
                return Err(missing_provider(&mut conn, &intent.intent.route).await)
            }
            Err(sqlx::Error::Database(e)) if e.message().contains("intent.contract") => {
                let name = intent.intent.contract.unwrap_or_default();
                return Err(Error::invalid_input(
                    "intent.contract",
                    format!("no contract named {name} is configured"),
                ));
            }
            Err(e) => return Err(e.into()),
        }
        let existing = job_rows::by_key(&mut conn, owner, key)
            .await?
            .ok_or_else(|| Error::internal("the key was taken, yet no job holds it"))?
            .into_job()?;
        if existing.fingerprint == intent.fingerprint {
            Ok(Submitted {
                job: existing,
                replayed: true,
            })
        } else {
            Err(Error::IdempotencyConflict {
                message: format!(
                    "key {key:?} already belongs to job {} with another intent; use a new key for a new intent",
                    existing.id
                ),
                details: ConflictDetails {
                    existing_job_id: existing.id,
                },
            })
        }
    }
}

/// Names the first provider of the route that is not configured.
async fn missing_provider(conn: &mut SqliteConnection, route: &[String]) -> Error {
    match provider_rows::first_missing(conn, route).await {
        Ok(Some((i, name))) => Error::invalid_input(
            format!("intent.route.{i}"),
            format!("no provider named {name} is configured"),
        ),
        Ok(None) => Error::invalid_input("intent.route", "names a provider that is not configured"),
        Err(e) => e.into(),
    }
}
