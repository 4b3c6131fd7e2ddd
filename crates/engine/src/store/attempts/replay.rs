//! Keyed replays of `unknown` attempts: the hold one replay takes on an attempt, and which
//! attempts may be replayed now, by the ledger's clock.

use std::time::Duration;

use crate::store::rows::AttemptRow;
use crate::store::{millis, on_backend, Handle};

/// Holds `unknown` attempt `id` for a keyed replay for `hold` from now, unless it moved, is
/// flagged, or another replay holds it still; returns whether it is held.
pub async fn hold_replay(h: &mut impl Handle, id: &str, hold: Duration) -> sqlx::Result<bool> {
    on_backend!(h, "attempts/hold_replay", |conn, sql| {
        sqlx::query(sql)
            .bind(id)
            .bind(millis(hold))
            .execute(conn)
            .await
            .map(|done| done.rows_affected() == 1)
    })
}

/// Lets go of a replay's hold on `unknown` attempt `id`.
pub async fn release_replay(h: &mut impl Handle, id: &str) -> sqlx::Result<()> {
    on_backend!(h, "attempts/release_replay", |conn, sql| {
        sqlx::query(sql).bind(id).execute(conn).await.map(|_| ())
    })
}

/// Until when a keyed replay holds `unknown` attempt `id`, by the ledger's clock; `None` when
/// none does.
pub async fn replay_held(h: &mut impl Handle, id: &str) -> sqlx::Result<Option<String>> {
    on_backend!(h, "attempts/replay_held", |conn, sql| {
        sqlx::query_scalar(sql).bind(id).fetch_optional(conn).await
    })
}

/// Up to `limit` `unknown` attempts a keyed replay may send again now (see
/// `attempts/replayable.sql`): the margin is `fraction` of the provider's key retention, at
/// least `floor`.
pub async fn replayable(
    h: &mut impl Handle,
    limit: u32,
    fraction: f64,
    floor: Duration,
) -> sqlx::Result<Vec<AttemptRow>> {
    let floor_ms = floor.as_millis() as f64;
    on_backend!(h, "attempts/replayable", |conn, sql| {
        sqlx::query_as(sql)
            .bind(i64::from(limit))
            .bind(fraction)
            .bind(floor_ms)
            .fetch_all(conn)
            .await
    })
}

/// Attempt `id`'s replay window by the database's clock: milliseconds until its hard deadline
/// has passed since it was sent (0 once it has), and until its provider's key retention less
/// the margin runs out, counted from the key's first use there (the earliest send of the job's
/// attempts at that provider; negative once it has; `None` without a retention). `None` when
/// the attempt or its provider is gone.
pub async fn replay_window(
    h: &mut impl Handle,
    id: &str,
    fraction: f64,
    floor: Duration,
) -> sqlx::Result<Option<(i64, Option<i64>)>> {
    let floor_ms = floor.as_millis() as f64;
    on_backend!(h, "attempts/replay_window", |conn, sql| {
        sqlx::query_as(sql)
            .bind(id)
            .bind(fraction)
            .bind(floor_ms)
            .fetch_optional(conn)
            .await
    })
}
