//! Provider configuration calls: add (or replace), list, remove.

use crate::error::{Error, Result};
use crate::input;
use crate::model::OpenJobs;
use crate::providers::{Provider, ProviderConfig};
use crate::store::{jobs as job_rows, providers as provider_rows};

use super::contracts::open_jobs;
use super::finish;
use crate::Engine;

impl Engine {
    /// Adds a provider from its JSON configuration, replacing one of the same name.
    /// Returns it and whether one was replaced.
    pub async fn add_provider(&self, config_json: &str) -> Result<(Provider, bool)> {
        let config = ProviderConfig::parse(config_json)?;
        let stored = serde_json::to_string(&config).map_err(|e| Error::internal(e.to_string()))?;
        let mut tx = self.begin().await?;
        let outcome = async {
            let replaced =
                provider_rows::upsert(&mut tx, &config.name, config.kind.as_str(), &stored).await?;
            let row = provider_rows::get(&mut tx, &config.name)
                .await?
                .ok_or_else(|| Error::internal("a provider vanished inside its transaction"))?;
            Ok((replaced, row))
        }
        .await;
        let (replaced, row) = finish(tx, outcome).await?;
        Ok((into_provider(row)?, replaced))
    }

    /// All configured providers, by name.
    pub async fn providers(&self) -> Result<Vec<Provider>> {
        let mut conn = self.read().await?;
        provider_rows::list(&mut conn)
            .await?
            .into_iter()
            .map(into_provider)
            .collect()
    }

    /// One provider by name, or `not_found`.
    pub async fn provider(&self, name: &str) -> Result<Provider> {
        input::refuse_nul("provider", name)?;
        let mut conn = self.read().await?;
        let row = provider_rows::get(&mut conn, name)
            .await?
            .ok_or_else(|| Error::not_found("provider", name))?;
        into_provider(row)
    }

    /// Jobs that are not closed and would be touched by removing this provider: those whose
    /// route names it, or whose open attempt is at it. Of every owner, since providers are
    /// shared by all owners. Whether the provider exists does not matter.
    pub async fn jobs_naming_provider(&self, name: &str) -> Result<OpenJobs> {
        input::refuse_nul("provider", name)?;
        let mut conn = self.read().await?;
        open_jobs(job_rows::open_naming_provider(&mut conn, name).await?)
    }

    /// Removes a provider. Jobs that name it keep its name; attempts already made keep it too.
    /// Its API key in the OS keyring is removed as well, best effort.
    pub async fn remove_provider(&self, name: &str) -> Result<()> {
        input::refuse_nul("provider", name)?;
        let mut tx = self.begin().await?;
        let outcome = match provider_rows::delete(&mut tx, name).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Error::not_found("provider", name)),
            Err(e) => Err(e.into()),
        };
        finish(tx, outcome).await?;
        self.forget_provider_key(name).await;
        Ok(())
    }
}

fn into_provider(row: provider_rows::ProviderRow) -> Result<Provider> {
    let config: ProviderConfig = serde_json::from_str(&row.config)
        .map_err(|e| Error::internal(format!("provider {} is stored unreadably: {e}", row.name)))?;
    Ok(Provider {
        config,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}
