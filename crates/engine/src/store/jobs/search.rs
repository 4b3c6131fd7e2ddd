//! The one SQL statement built at run time: the owner's jobs that pass a [`Filter`], read a
//! keyset page at a time (whole rows or summaries, their columns the head of the statement,
//! `jobs/page.sql` and `jobs/summaries.sql`) or counted. Bulk operations select their jobs with
//! the same builder ([`build`]).

use sqlx::QueryBuilder;

use super::SummaryRow;
use crate::job::JobStatus;
use crate::store::ids::{fits_id_text, HIGHEST_ID, LOWEST_ID};
use crate::store::rows::JobRow;
use crate::store::{queries, Conn, Handle, Queries};

/// Which of an owner's jobs a page or a count covers.
#[derive(Debug, Clone, Copy, Default)]
pub struct Filter<'a> {
    pub status: Option<JobStatus>,
    /// A prefix of the idempotency key (as given), or of the id (lowercased); non-empty.
    pub search: Option<&'a str>,
    /// A provider the job's route names or one of its attempts ran at.
    pub provider: Option<&'a str>,
    /// The error kind of the job's open attempt (an `unknown` one's rule of SPEC §6).
    pub error_kind: Option<&'a str>,
    /// Created strictly before this time, in the ledger's text form (`…T…:…:….mmmZ`).
    pub created_before: Option<&'a str>,
    /// Created strictly after this time, in the ledger's text form.
    pub created_after: Option<&'a str>,
}

/// The ids a prefix of an id's canonical text covers, as the lowest and highest id it could
/// start: a range both backends' indexes serve. `None` when no id can start with it.
fn id_range(prefix: &str) -> Option<(String, String)> {
    let prefix = prefix.trim().to_ascii_lowercase();
    (!prefix.is_empty() && fits_id_text(&prefix)).then(|| {
        (
            format!("{prefix}{}", &LOWEST_ID[prefix.len()..]),
            format!("{prefix}{}", &HIGHEST_ID[prefix.len()..]),
        )
    })
}

/// Builds `SELECT <what> FROM … WHERE …` for the owner's jobs that pass `filter`, on either
/// backend (`pg` says which), with the keyset `cursor`, order and limit when `page` is given.
/// Prefixes of ids become ranges (`id_range`) so the indexes serve them; a key prefix is a
/// range on SQLite (`>= prefix AND < prefix + U+10FFFF`, bytewise) and `starts_with` on
/// PostgreSQL, whose text order follows the database's collation.
pub(in crate::store) fn build<'q, DB>(
    q: &mut QueryBuilder<'q, DB>,
    pg: bool,
    owner: &'q str,
    filter: &Filter<'q>,
    page: Option<(Option<&'q str>, u32, bool)>,
) where
    DB: sqlx::Database,
    &'q str: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    String: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
    i64: sqlx::Encode<'q, DB> + sqlx::Type<DB>,
{
    let as_id = if pg { "::uuid" } else { "" };
    let order = match filter.provider {
        Some(provider) => {
            // Driven from `job_providers`, whose key gives one owner's jobs at one provider in id order.
            q.push(" FROM job_providers p JOIN jobs j ON j.id = p.job_id WHERE p.provider = ");
            q.push_bind(provider);
            q.push(" AND p.owner_id = ");
            q.push_bind(owner);
            "p.job_id"
        }
        // With a search, each of its two ranges names the owner itself: a separate
        // `owner_id = ?` would let the planner walk every job of the owner in id order instead.
        None if filter.search.is_some() => {
            q.push(" FROM jobs j WHERE 1 = 1");
            "j.id"
        }
        None => {
            q.push(" FROM jobs j WHERE j.owner_id = ");
            q.push_bind(owner);
            "j.id"
        }
    };
    if let Some(status) = filter.status {
        q.push(" AND j.status = ");
        q.push_bind(status.as_str());
    }
    if let Some(kind) = filter.error_kind {
        q.push(
            " AND EXISTS (SELECT 1 FROM attempts a WHERE a.job_id = j.id \
             AND a.state IN ('pending', 'in_flight', 'unknown') AND a.error_kind = ",
        );
        q.push_bind(kind);
        q.push(")");
    }
    let as_time = if pg { "::timestamptz" } else { "" };
    if let Some(before) = filter.created_before {
        q.push(" AND j.created_at < ");
        q.push_bind(before);
        q.push(as_time);
    }
    if let Some(after) = filter.created_after {
        q.push(" AND j.created_at > ");
        q.push_bind(after);
        q.push(as_time);
    }
    if let Some(search) = filter.search {
        q.push(" AND ((j.owner_id = ");
        q.push_bind(owner);
        if pg {
            q.push(" AND starts_with(j.idempotency_key, ");
            q.push_bind(search.to_owned());
            q.push(")");
        } else {
            q.push(" AND j.idempotency_key >= ");
            q.push_bind(search.to_owned());
            q.push(" AND j.idempotency_key < ");
            q.push_bind(format!("{search}{}", char::MAX));
        }
        q.push(")");
        if let Some((low, high)) = id_range(search) {
            q.push(" OR (j.owner_id = ");
            q.push_bind(owner);
            q.push(" AND j.id >= ");
            q.push_bind(low);
            q.push(as_id);
            q.push(" AND j.id <= ");
            q.push_bind(high);
            q.push(as_id);
            q.push(")");
        }
        q.push(")");
    }
    if let Some((cursor, limit, oldest_first)) = page {
        let (beyond, direction) = if oldest_first {
            (" > ", " ASC")
        } else {
            (" < ", " DESC")
        };
        if let Some(cursor) = cursor {
            q.push(format!(" AND {order}{beyond}"));
            q.push_bind(cursor);
            q.push(as_id);
        }
        q.push(format!(" ORDER BY {order}{direction} LIMIT "));
        q.push_bind(i64::from(limit));
    }
}

/// A row a keyset page of jobs is read as: a whole row ([`JobRow`]) or a list's summary
/// ([`SummaryRow`]).
pub(crate) trait PageRow:
    for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow>
    + for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>
    + Send
    + Unpin
{
    /// The columns that start the page's statement.
    const HEAD: Queries;
}

impl PageRow for JobRow {
    const HEAD: Queries = queries!("jobs/page");
}

impl PageRow for SummaryRow {
    const HEAD: Queries = queries!("jobs/summaries");
}

/// Up to `limit` of the owner's jobs that pass `filter`, each read as `R`, newest first and
/// strictly older than `cursor` (or oldest first and strictly newer, with `oldest_first`).
pub(crate) async fn page<R: PageRow>(
    h: &mut impl Handle,
    owner: &str,
    filter: &Filter<'_>,
    cursor: Option<&str>,
    limit: u32,
    oldest_first: bool,
) -> sqlx::Result<Vec<R>> {
    let page = Some((cursor, limit, oldest_first));
    match h.conn() {
        Conn::Sqlite(conn, at) => {
            let mut q = QueryBuilder::new(R::HEAD.sqlite);
            build(&mut q, false, owner, filter, page);
            q.build_query_as()
                .fetch_all(conn)
                .await
                .map_err(|e| crate::store::sqlite::named(at, e))
        }
        Conn::Postgres(conn, watch) => {
            let mut q = QueryBuilder::new(R::HEAD.postgres);
            build(&mut q, true, owner, filter, page);
            watch.guard(q.build_query_as().fetch_all(conn)).await
        }
    }
}

/// How many of the owner's jobs pass `filter`.
pub async fn count(h: &mut impl Handle, owner: &str, filter: &Filter<'_>) -> sqlx::Result<i64> {
    match h.conn() {
        Conn::Sqlite(conn, at) => {
            let mut q = QueryBuilder::new("SELECT count(*)");
            build(&mut q, false, owner, filter, None);
            q.build_query_scalar()
                .fetch_one(conn)
                .await
                .map_err(|e| crate::store::sqlite::named(at, e))
        }
        Conn::Postgres(conn, watch) => {
            let mut q = QueryBuilder::new("SELECT count(*)");
            build(&mut q, true, owner, filter, None);
            watch.guard(q.build_query_scalar().fetch_one(conn)).await
        }
    }
}
