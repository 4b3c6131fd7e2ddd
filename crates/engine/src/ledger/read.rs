//! Reads: a job with its attempts and history, pages of jobs, counts for the UI.

use crate::error::{Error, Result};
use crate::intent::validate_owner;
use crate::model::{Attempt, JobDetail, JobPage};
use crate::store::{attempts as attempt_rows, events, jobs as job_rows};
use crate::{Engine, JobStatus, JobsQuery, DEFAULT_PAGE, MAX_PAGE};

use super::{owned_attempt_row, owned_job_row};

impl Engine {
    /// The owner's job with its attempts and event history; another owner's is `not_found`.
    pub async fn job(&self, owner: &str, job_id: &str) -> Result<JobDetail> {
        let mut conn = self.reader.acquire().await?;
        let job = owned_job_row(&mut conn, owner, job_id).await?.into_job()?;
        let attempts = attempt_rows::for_job(&mut conn, job_id)
            .await?
            .into_iter()
            .map(|a| a.into_attempt())
            .collect::<Result<Vec<_>>>()?;
        let events = events::for_job(&mut conn, job_id).await?;
        Ok(JobDetail {
            job,
            attempts,
            events,
        })
    }

    /// The owner's attempt by id; another owner's is `not_found`.
    pub async fn attempt(&self, owner: &str, attempt_id: &str) -> Result<Attempt> {
        let mut conn = self.reader.acquire().await?;
        owned_attempt_row(&mut conn, owner, attempt_id)
            .await?
            .into_attempt()
    }

    /// One page of the owner's jobs, newest first (oldest first with `oldest_first`), by
    /// keyset: `next` is the cursor to pass as `after` for the following page, `None` on the
    /// last.
    pub async fn jobs(&self, owner: &str, query: &JobsQuery) -> Result<JobPage> {
        validate_owner(owner)?;
        let limit = query.limit.unwrap_or(DEFAULT_PAGE);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(Error::invalid_input(
                "limit",
                format!("{limit} is outside 1-{MAX_PAGE}"),
            ));
        }
        if let Some(after) = &query.after {
            if uuid::Uuid::parse_str(after).is_err() {
                return Err(Error::invalid_input(
                    "after",
                    format!("{after:?} is not a cursor from a previous page"),
                ));
            }
        }
        let mut conn = self.reader.acquire().await?;
        // One row more than asked tells whether another page follows.
        let mut rows = job_rows::page(
            &mut conn,
            owner,
            query.status,
            query.after.as_deref(),
            limit + 1,
            query.oldest_first,
        )
        .await?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let jobs = rows
            .into_iter()
            .map(|r| r.into_job())
            .collect::<Result<Vec<_>>>()?;
        let next = if more {
            jobs.last().map(|j| j.id.clone())
        } else {
            None
        };
        Ok(JobPage { jobs, next })
    }

    /// How many of the owner's jobs there are, of one status when given (for a list's
    /// scrollbar: pages are fetched by keyset, never counted by offset).
    pub async fn count_jobs(&self, owner: &str, status: Option<JobStatus>) -> Result<u32> {
        validate_owner(owner)?;
        let mut conn = self.reader.acquire().await?;
        let n = job_rows::count(&mut conn, owner, status).await?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// How many of the owner's jobs need a person: `unknown`, or flagged for review.
    pub async fn needs_attention(&self, owner: &str) -> Result<u32> {
        validate_owner(owner)?;
        let mut conn = self.reader.acquire().await?;
        let n = job_rows::needing_attention(&mut conn, owner).await?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }
}
