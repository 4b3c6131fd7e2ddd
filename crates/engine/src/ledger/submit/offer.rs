//! The group a submit leader offers while it waits for the SQLite writer (ADR 0057). Whoever
//! holds the writer meanwhile (a bulk operation) may take it into its own transaction and
//! answer it after its commit; the leader takes it back once it holds the writer itself.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use tokio::sync::Notify;

use crate::error::Result;
use crate::ledger::finish;
use crate::store::sqlite::WriterGuard;
use crate::store::{Db, Tx};

use super::commit::{answer, steps};
use super::ToSubmit;

/// At most one group, offered by the leader now waiting for the writer: only the holder of the
/// group lock offers, and it takes its group back before it lets the lock go.
#[derive(Default)]
pub(super) struct Offered {
    group: Mutex<Option<(u64, Vec<ToSubmit>)>>,
    /// Tells one offer from the next, so an offer given up only ever clears itself.
    next: AtomicU64,
    /// Told when a group is taken: its leader stops waiting for the writer.
    taken: Notify,
}

/// A group on offer; dropped before it is taken back (its leader gone while it waited), it is
/// withdrawn, and its callers learn that nobody will answer them.
struct Offer<'o> {
    offered: &'o Offered,
    id: u64,
}

impl Offered {
    /// Offers `group` until the offer is taken back.
    fn offer(&self, group: Vec<ToSubmit>) -> Offer<'_> {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut slot) = self.group.lock() {
            *slot = Some((id, group));
        }
        Offer { offered: self, id }
    }

    /// The group on offer, if any, for the holder of the writer to commit.
    pub(super) fn take(&self) -> Option<Vec<ToSubmit>> {
        let taken = self.group.lock().ok()?.take().map(|(_, group)| group);
        if taken.is_some() {
            self.taken.notify_waiters();
        }
        taken
    }

    /// Offers `group` while waiting for the SQLite writer of `db`: the writer, held, with the
    /// group back; or `None` when the holder of the writer took the group (it answers it).
    pub(super) async fn wait_for_writer(
        &self,
        db: &Db,
        group: Vec<ToSubmit>,
    ) -> Option<(Result<Option<WriterGuard>>, Vec<ToSubmit>)> {
        let taken = self.taken.notified();
        tokio::pin!(taken);
        taken.as_mut().enable();
        let offer = self.offer(group);
        let held = tokio::select! {
            held = db.hold() => Some(held),
            () = &mut taken => None,
        };
        let group = offer.take_back()?;
        let held = match held {
            Some(held) => held,
            None => db.hold().await,
        };
        Some((held, group))
    }

    fn withdraw(&self, id: u64) -> Option<Vec<ToSubmit>> {
        let mut slot = self.group.lock().ok()?;
        match slot.take() {
            Some((offered, group)) if offered == id => Some(group),
            other => {
                *slot = other;
                None
            }
        }
    }
}

impl Offer<'_> {
    /// The group back, or `None` when the holder of the writer took it: it answers it then.
    fn take_back(self) -> Option<Vec<ToSubmit>> {
        self.offered.withdraw(self.id)
    }
}

impl Drop for Offer<'_> {
    fn drop(&mut self) {
        drop(self.offered.withdraw(self.id));
    }
}

/// Submits taken from their leader by the holder of the writer, to be committed in its
/// transaction by [`Riders::ride`]. Dropped unanswered, its callers learn that nobody will
/// answer them.
pub(crate) struct Riders {
    group: Vec<ToSubmit>,
}

impl Riders {
    pub(super) fn new(group: Vec<ToSubmit>) -> Riders {
        Riders { group }
    }

    /// Runs each submit on `tx` after the holder's own work (`done`), each under a savepoint
    /// of its own as in a group of submits, then ends the transaction through [`finish`]; once
    /// it has ended, answers each caller with what the commit gave it, or every one with the
    /// failure that ended it, and wakes the executor when a job was created. The holder gets
    /// back its own outcome, or that failure.
    pub(crate) async fn ride<T>(self, mut tx: Tx, done: Result<T>, work: &Notify) -> Result<T> {
        let outcome = match steps(&mut tx, &self.group).await {
            Ok(ridden) => done.map(|done| (done, ridden)),
            Err(e) => Err(e),
        };
        match finish(tx, outcome).await {
            Ok((done, ridden)) => {
                answer(work, self.group, Ok(ridden));
                Ok(done)
            }
            Err(e) => {
                answer(work, self.group, Err(e.clone()));
                Err(e)
            }
        }
    }
}
