//! `submit` (SPEC §2): one job per (owner, key), decided by the database's unique constraint.

use serde_json::json;

use crate::error::{ConflictDetails, Error, Result};
use crate::intent::{parse_intent, validate_intent, validate_key, validate_owner, ValidIntent};
use crate::model::{Actor, Submitted};
use crate::store::{jobs as job_rows, providers as provider_rows};
use crate::Engine;

use super::event;

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
        {
            let mut conn = self.reader.acquire().await?;
            let missing = provider_rows::missing(&mut conn, &intent.intent.route).await?;
            if let Some(name) = missing.first() {
                let i = intent
                    .intent
                    .route
                    .iter()
                    .position(|n| n == name)
                    .unwrap_or(0);
                return Err(Error::invalid_input(
                    format!("intent.route.{i}"),
                    format!("no provider named {name} is configured"),
                ));
            }
        }
        let id = uuid::Uuid::now_v7().to_string();
        let mut tx = self.begin().await?;
        let new = job_rows::NewJob {
            id: &id,
            owner_id: owner,
            idempotency_key: key,
            fingerprint: &intent.fingerprint,
            intent: &intent.stored,
        };
        if let Some(row) = job_rows::insert_if_new(&mut tx, &new).await? {
            event(
                &mut tx,
                &id,
                None,
                "submitted",
                Actor::User,
                json!({ "idempotency_key": key, "fingerprint": intent.fingerprint }),
            )
            .await?;
            tx.commit().await?;
            self.wake_executor();
            return Ok(Submitted {
                job: row.into_job()?,
                replayed: false,
            });
        }
        let existing = job_rows::by_key(&mut tx, owner, key)
            .await?
            .ok_or_else(|| Error::internal("the key was taken, yet no job holds it"))?
            .into_job()?;
        tx.commit().await?;
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
