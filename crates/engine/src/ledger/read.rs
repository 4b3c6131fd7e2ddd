//! Reads: a job with its attempts and history, pages of jobs, counts for the UI.

use chrono::{DateTime, NaiveDate, SecondsFormat, Utc};
use serde_json::Value;

use crate::bulk::BulkFilter;
use crate::error::{Error, NotFoundDetails, Result};
use crate::input;
use crate::intent::validate_owner;
use crate::known::Known;
use crate::model::{
    Attempt, Event, Job, JobDetail, JobPage, JobSummaryPage, ShownJobDetail, Usage,
};
use crate::money::Cost;
use crate::shown::JobPart;
use crate::store::jobs::{self as job_rows, JobRow, PageRow, SummaryRow};
use crate::store::{attempts as attempt_rows, events, evidence as evidence_rows};
use crate::store::{json_column, Handle};
use crate::{Engine, JobsQuery, DEFAULT_PAGE, MAX_PAGE, MAX_SEARCH};

use super::{owned_attempt_row, owned_job_row};

impl Engine {
    /// The owner's job with its attempts and event history; another owner's is `not_found`.
    pub async fn job(&self, owner: &str, job_id: &str) -> Result<JobDetail> {
        let job_id = &input::id("job_id", "job", job_id)?;
        let mut conn = self.read().await?;
        let job = owned_job_row(&mut conn, owner, job_id).await?.into_job()?;
        let history = History::of(&mut conn, job_id).await?;
        Ok(with_history!(JobDetail, job, history))
    }

    /// [`Engine::job`] as a screen shows it: the intent and result each whole, or when its
    /// JSON text is over 64 KiB only its length and first part, measured by the database so
    /// that a large value is never read to be measured (`crate::ShownValue::measured`).
    pub async fn job_shown(&self, owner: &str, job_id: &str) -> Result<ShownJobDetail> {
        let job_id = &input::id("job_id", "job", job_id)?;
        validate_owner(owner)?;
        let mut conn = self.read().await?;
        let job = job_rows::shown(&mut conn, owner, job_id)
            .await?
            .ok_or_else(|| Error::not_found("job", job_id))?
            .into_shown()?;
        let history = History::of(&mut conn, job_id).await?;
        Ok(with_history!(ShownJobDetail, job, history))
    }

    /// One value of the owner's job, whole: its intent, its result, or the detail of one event
    /// of its history. Another owner's job, a job with no result yet, or an event index past
    /// the history's end is `not_found`.
    pub async fn job_part(&self, owner: &str, job_id: &str, part: JobPart) -> Result<Value> {
        let job_id = &input::id("job_id", "job", job_id)?;
        let mut conn = self.read().await?;
        let job = owned_job_row(&mut conn, owner, job_id).await?.into_job()?;
        let value = match part {
            JobPart::Intent => Some(job.intent),
            JobPart::Result => job.result,
            JobPart::EventDetail { index } => events::for_job(&mut conn, job_id)
                .await?
                .into_iter()
                .nth(index as usize)
                .map(|e| e.detail),
            // The body as sent: JSON, read back as JSON (text when it is not).
            JobPart::SentBody { number } => evidence_rows::body(&mut conn, job_id, number)
                .await?
                .map(|body| json_column(&body)),
        };
        let missing = match part {
            JobPart::EventDetail { index } => format!("no event at index {index}"),
            JobPart::SentBody { number } => {
                format!("no recorded body sent for attempt {number}")
            }
            _ => format!("no {} yet", part.name()),
        };
        value.ok_or_else(|| Error::NotFound {
            message: format!("job {job_id} has {missing}"),
            details: NotFoundDetails {
                entity: part.name(),
                id: job_id.to_owned(),
            },
        })
    }

    /// The owner's attempt by id; another owner's is `not_found`.
    pub async fn attempt(&self, owner: &str, attempt_id: &str) -> Result<Attempt> {
        let attempt_id = &input::id("attempt_id", "attempt", attempt_id)?;
        let mut conn = self.read().await?;
        owned_attempt_row(&mut conn, owner, attempt_id)
            .await?
            .into_attempt()
    }

    /// One page of the owner's jobs, newest first (oldest first with `oldest_first`), by
    /// keyset: `next` is the cursor to pass as `after` for the following page, `None` on the
    /// last.
    pub async fn jobs(&self, owner: &str, query: &JobsQuery) -> Result<JobPage> {
        let (jobs, next) = self
            .keyset_page(owner, query, JobRow::into_job, |j| &j.id)
            .await?;
        Ok(JobPage { jobs, next })
    }

    /// [`Engine::jobs`] as a list shows them: summaries, with the intent only as its route
    /// and no result, so a page costs the same however large its jobs' values are.
    pub async fn job_summaries(&self, owner: &str, query: &JobsQuery) -> Result<JobSummaryPage> {
        let (jobs, next) = self
            .keyset_page(owner, query, SummaryRow::into_summary, |j| &j.id)
            .await?;
        Ok(JobSummaryPage { jobs, next })
    }

    /// One page of the owner's jobs that pass the query, each read as `R` and made an item by
    /// `into`, with the cursor of the following page (the `id` of its last item) when there
    /// is one.
    async fn keyset_page<R: PageRow, T>(
        &self,
        owner: &str,
        query: &JobsQuery,
        into: impl Fn(R) -> Result<T>,
        id: impl Fn(&T) -> &String,
    ) -> Result<(Vec<T>, Option<String>)> {
        validate_owner(owner)?;
        let limit = query.limit.unwrap_or(DEFAULT_PAGE);
        check_limit(limit)?;
        let after = query.after.as_deref().map(cursor).transpose()?;
        let filter = ListFilter::of_query(query)?;
        let mut conn = self.read().await?;
        // One row more than asked tells whether another page follows.
        let mut rows = job_rows::page::<R>(
            &mut conn,
            owner,
            &filter.rows(),
            after.as_deref(),
            limit + 1,
            query.oldest_first,
        )
        .await?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let items = rows.into_iter().map(into).collect::<Result<Vec<_>>>()?;
        let next = items.last().filter(|_| more).map(|last| id(last).clone());
        Ok((items, next))
    }

    /// How many of the owner's jobs pass the query's filters (status, search, provider, error
    /// kind, created before/after);
    /// its position and size (`after`, `limit`, `oldest_first`) are ignored. For a list's
    /// scrollbar: pages are fetched by keyset, never counted by offset.
    pub async fn count_jobs(&self, owner: &str, query: &JobsQuery) -> Result<u32> {
        validate_owner(owner)?;
        let filter = ListFilter::of_query(query)?;
        let mut conn = self.read().await?;
        let n = job_rows::count(&mut conn, owner, &filter.rows()).await?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// How many of the owner's jobs need a person: `unknown`, or flagged for review.
    pub async fn needs_attention(&self, owner: &str) -> Result<u32> {
        validate_owner(owner)?;
        let mut conn = self.read().await?;
        let n = job_rows::needing_attention(&mut conn, owner).await?;
        Ok(u32::try_from(n).unwrap_or(u32::MAX))
    }

    /// The jobs that need a person (status `unknown`, or flagged for review), most recently updated first, at most `limit`.
    /// `limit` outside 1–`MAX_PAGE` is `invalid_input` (field `limit`).
    pub async fn attention_jobs(&self, owner: &str, limit: u32) -> Result<Vec<Job>> {
        validate_owner(owner)?;
        check_limit(limit)?;
        let mut conn = self.read().await?;
        job_rows::needing_attention_list(&mut conn, owner, limit)
            .await?
            .into_iter()
            .map(|r| r.into_job())
            .collect()
    }
}

/// What a job's detail shows besides the job: its attempts, its event history, the tokens
/// reported over all its attempts, and what is known of each `unknown` one.
struct History {
    attempts: Vec<Attempt>,
    events: Vec<Event>,
    usage: Option<Usage>,
    cost: Vec<Cost>,
    known: Vec<Known>,
}

/// `$detail { job: $job, … }` with the rest from `$history`: [`JobDetail`] and
/// [`ShownJobDetail`] differ only in their job's type (a macro, as they are two types).
macro_rules! with_history {
    ($detail:ident, $job:expr, $history:expr) => {{
        let History {
            attempts,
            events,
            usage,
            cost,
            known,
        } = $history;
        $detail {
            job: $job,
            attempts,
            events,
            usage,
            cost,
            known,
        }
    }};
}
use with_history;

impl History {
    /// Reads the history of job `job_id`.
    async fn of(conn: &mut impl Handle, job_id: &str) -> Result<History> {
        let attempts = attempt_rows::for_job(conn, job_id)
            .await?
            .into_iter()
            .map(|a| a.into_attempt())
            .collect::<Result<Vec<_>>>()?;
        let events = events::for_job(conn, job_id).await?;
        let usage = Usage::total(attempts.iter().filter_map(|a| a.usage.as_ref()));
        let known = super::evidence::known_of(conn, job_id, &attempts, &events).await?;
        let cost = crate::money::totals(&attempts);
        Ok(History {
            cost,
            attempts,
            events,
            usage,
            known,
        })
    }
}

/// A page size within 1–`MAX_PAGE`, or `invalid_input` naming `limit`.
pub(super) fn check_limit(limit: u32) -> Result<()> {
    if (1..=MAX_PAGE).contains(&limit) {
        Ok(())
    } else {
        Err(Error::invalid_input(
            "limit",
            format!("{limit} is outside 1-{MAX_PAGE}"),
        ))
    }
}

/// The cursor `after` as the ledger holds ids: a job id in any form the UUID parser reads (the
/// `next` of a page, in whatever case or wrapping a client gave it back), or `invalid_input`
/// naming `after`.
fn cursor(after: &str) -> Result<String> {
    input::refuse_nul("after", after)?;
    input::canonical_uuid(after).ok_or_else(|| {
        Error::invalid_input(
            "after",
            format!("{after:?} is not a cursor from a previous page"),
        )
    })
}

/// The longest error kind a filter takes.
const MAX_ERROR_KIND: usize = 64;

/// The Jobs list's filter checked and in one form, as the list, its count and a bulk
/// operation's set all read it: a blank term is no filter; a search longer than any key or id,
/// or an error kind longer than any, is `invalid_input` naming it; a time (RFC 3339, or a date
/// for its midnight UTC) is kept in the ledger's text form, so SQLite compares text and
/// PostgreSQL `timestamptz`.
#[derive(Debug, Clone)]
pub(super) struct ListFilter(BulkFilter);

impl ListFilter {
    /// Checks a filter and puts it in one form.
    pub(super) fn new(filter: &BulkFilter) -> Result<ListFilter> {
        input::refuse_nul_in("search", filter.search.as_deref())?;
        input::refuse_nul_in("provider", filter.provider.as_deref())?;
        input::refuse_nul_in("error_kind", filter.error_kind.as_deref())?;
        let search = blank_is_none(filter.search.clone());
        if let Some(search) = &search {
            let chars = search.chars().count();
            if chars > MAX_SEARCH {
                return Err(Error::invalid_input(
                    "search",
                    format!(
                        "{chars} characters is longer than any key or id ({MAX_SEARCH} at most)"
                    ),
                ));
            }
        }
        let error_kind = blank_is_none(filter.error_kind.clone());
        if let Some(kind) = &error_kind {
            if kind.chars().count() > MAX_ERROR_KIND {
                return Err(Error::invalid_input(
                    "error_kind",
                    format!("is longer than any error kind ({MAX_ERROR_KIND} characters at most)"),
                ));
            }
        }
        Ok(ListFilter(BulkFilter {
            status: filter.status,
            provider: blank_is_none(filter.provider.clone()),
            error_kind,
            created_before: ledger_time("created_before", filter.created_before.clone())?,
            created_after: ledger_time("created_after", filter.created_after.clone())?,
            search,
        }))
    }

    /// A Jobs query's filters, checked; its position and size are not filters.
    pub(super) fn of_query(query: &JobsQuery) -> Result<ListFilter> {
        ListFilter::new(&query.filter())
    }

    /// The filter as checked.
    pub(super) fn terms(&self) -> &BulkFilter {
        &self.0
    }

    /// The filter as the store takes it.
    pub(super) fn rows(&self) -> job_rows::Filter<'_> {
        let f = &self.0;
        job_rows::Filter {
            status: f.status,
            search: f.search.as_deref(),
            provider: f.provider.as_deref(),
            error_kind: f.error_kind.as_deref(),
            created_before: f.created_before.as_deref(),
            created_after: f.created_after.as_deref(),
        }
    }
}

/// A text that is empty or only whitespace is none.
pub(super) fn blank_is_none(text: Option<String>) -> Option<String> {
    text.filter(|t| !t.trim().is_empty())
}

/// A time a filter takes (RFC 3339, or a date for its midnight UTC) in the ledger's text form,
/// or `invalid_input` naming `field`; blank is none.
pub(super) fn ledger_time(field: &str, text: Option<String>) -> Result<Option<String>> {
    let Some(text) = blank_is_none(text) else {
        return Ok(None);
    };
    input::refuse_nul(field, &text)?;
    let trimmed = text.trim();
    let at = DateTime::parse_from_rfc3339(trimmed)
        .map(|t| t.with_timezone(&Utc))
        .or_else(|_| {
            NaiveDate::parse_from_str(trimmed, "%Y-%m-%d")
                .map(|d| d.and_hms_opt(0, 0, 0).unwrap_or_default().and_utc())
        })
        .map_err(|_| {
            Error::invalid_input(
                field,
                format!("{text:?} is not a time: give RFC 3339 (2026-12-03T15:00:00Z) or a date"),
            )
        })?;
    Ok(Some(at.to_rfc3339_opts(SecondsFormat::Millis, true)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_time_is_read_as_rfc_3339_or_a_date_and_written_as_the_ledger_does() {
        let at = ledger_time("t", Some("2026-12-03T16:00:00+01:00".into())).unwrap();
        assert_eq!(at.as_deref(), Some("2026-12-03T15:00:00.000Z"));
        let day = ledger_time("t", Some("2026-12-03".into())).unwrap();
        assert_eq!(day.as_deref(), Some("2026-12-03T00:00:00.000Z"));
        assert_eq!(ledger_time("t", Some("  ".into())).unwrap(), None);
        let bad = ledger_time("created_before", Some("yesterday".into())).unwrap_err();
        assert_eq!(bad.code(), "invalid_input");
    }
}
