//! The change feed: `LISTEN` on a connection of its own, pinged when quiet, and made again
//! when it drops or stops answering.

use std::sync::Arc;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgListener, PgPoolOptions};
use tokio::sync::watch;

use crate::error::Result;

use super::liveness::Liveness;
use super::{PgDb, CHANNEL, CONNECT_TIMEOUT, PROBE_TIMEOUT};

/// How long the change feed's connection may stay quiet before it is pinged.
const LISTEN_QUIET: Duration = Duration::from_secs(5);

/// The longest wait between two tries to reconnect the change feed.
const LISTEN_BACKOFF_CAP: Duration = Duration::from_secs(5);

impl PgDb {
    /// A counter that rises whenever the ledger changes, whoever changed it: `LISTEN` on a
    /// connection of its own. When that connection drops, or stays quiet for [`LISTEN_QUIET`]
    /// and then does not answer a ping within [`PROBE_TIMEOUT`], it is dropped and another is
    /// made, with backoff; a change is counted once it listens again, since notifications sent
    /// meanwhile are lost. Also the task that listens, which ends soon after `stop` is asked or
    /// the ledger is closed, without waiting out a connection being made.
    pub(crate) async fn changes(
        &self,
        stop: crate::store::FeedStop,
    ) -> Result<(watch::Receiver<u64>, tokio::task::JoinHandle<()>)> {
        let listener = listen(&self.live.hosts.options()).await?;
        let (tx, rx) = watch::channel(0u64);
        let closed = self.pool.close_event();
        let task = tokio::spawn(follow(listener, self.live.clone(), tx, closed, stop));
        Ok((rx, task))
    }
}

/// `LISTEN` on a new connection, in a pool of its own: a connection given up on while the
/// server does not answer holds none of the ledger's pool.
async fn listen(options: &PgConnectOptions) -> sqlx::Result<PgListener> {
    let pool = PgPoolOptions::new()
        .max_connections(1)
        .idle_timeout(None)
        .max_lifetime(None)
        .acquire_timeout(CONNECT_TIMEOUT)
        .connect_lazy_with(options.clone());
    let listening = async {
        let mut listener = PgListener::connect_with(&pool).await?;
        // A lost connection is replaced here, by a new listener, with backoff.
        listener.eager_reconnect(false);
        listener.listen(CHANNEL).await?;
        Ok(listener)
    };
    tokio::time::timeout(CONNECT_TIMEOUT, listening)
        .await
        .map_err(|_| sqlx::Error::PoolTimedOut)?
}

/// The change feed's loop: counts each notification until every receiver is gone or the
/// ledger is `closed`, and keeps a listening connection that answers.
async fn follow(
    listener: PgListener,
    live: Arc<Liveness>,
    tx: watch::Sender<u64>,
    closed: sqlx::pool::CloseEvent,
    mut stop: crate::store::FeedStop,
) {
    tokio::pin!(closed);
    let mut listener = Some(listener);
    let mut failures = 0u32;
    loop {
        let Some(listening) = listener.as_mut() else {
            // Reconnecting: a little later each time, up to LISTEN_BACKOFF_CAP.
            let wait = Duration::from_millis(100)
                .saturating_mul(1 << failures.min(6))
                .min(LISTEN_BACKOFF_CAP);
            tokio::select! {
                () = tx.closed() => break,
                () = &mut closed => break,
                () = stop.asked() => break,
                () = tokio::time::sleep(wait) => {}
            }
            let again = async {
                if live.hosts.suspected() {
                    let _ = live.hosts.find().await;
                }
                listen(&live.hosts.options()).await
            };
            let again = tokio::select! {
                () = tx.closed() => break,
                () = &mut closed => break,
                () = stop.asked() => break,
                again = again => again,
            };
            match again {
                Ok(again) => {
                    listener = Some(again);
                    failures = 0;
                    tx.send_modify(|n| *n += 1);
                }
                Err(_) => failures = failures.saturating_add(1),
            }
            continue;
        };
        let next = tokio::select! {
            () = tx.closed() => break,
            () = &mut closed => break,
            () = stop.asked() => break,
            next = tokio::time::timeout(LISTEN_QUIET, listening.try_recv()) => next,
        };
        match next {
            Ok(Ok(Some(_))) => tx.send_modify(|n| *n += 1),
            // The connection was lost or failed: start over on a new one, and count a change
            // once it listens.
            Ok(Ok(None) | Err(_)) => listener = None,
            // Quiet for a while: a server that stopped answering says nothing either.
            Err(_) => {
                let ping = sqlx::query("SELECT 1").execute(&mut *listening);
                if !matches!(tokio::time::timeout(PROBE_TIMEOUT, ping).await, Ok(Ok(_))) {
                    listener = None;
                }
            }
        }
    }
}
