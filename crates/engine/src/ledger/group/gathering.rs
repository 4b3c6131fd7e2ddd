//! Gathering a group: callers queue their items and take turns at the group lock. Shared by
//! the executor's writes (`WriteQueue`) and by submits (`submit/`).

use std::future::Future;
use std::sync::Mutex;

use super::MAX_GROUP;
use crate::error::{Error, Result};

/// What every group commit shares: callers queue their item, then wait for the group lock (a
/// fair tokio mutex); whoever holds it takes everything queued, up to [`MAX_GROUP`].
pub(crate) struct Gathering<T> {
    waiting: Mutex<Vec<T>>,
    leader: tokio::sync::Mutex<()>,
}

impl<T> Gathering<T> {
    pub(crate) fn new() -> Gathering<T> {
        Gathering {
            waiting: Mutex::new(Vec::new()),
            leader: tokio::sync::Mutex::new(()),
        }
    }

    /// Queues `item` for the next group.
    pub(crate) fn push(&self, item: T) -> Result<()> {
        self.waiting
            .lock()
            .map_err(|_| Error::internal("a group commit's queue was poisoned"))?
            .push(item);
        Ok(())
    }

    /// Takes the group lock, then what is queued: nothing when an earlier holder already took
    /// this caller's item. The group is committed while the guard is held.
    #[cfg(test)]
    pub(crate) async fn take(&self) -> (tokio::sync::MutexGuard<'_, ()>, Vec<T>) {
        let leader = self.leader.lock().await;
        (leader, self.drain())
    }

    /// For a caller whose item is queued: waits for its `answer`, leading groups meanwhile.
    /// Each turn, whichever comes first: the answer, when another holder took and committed
    /// the item; or the group lock, with what is queued then, which `commit` commits while
    /// the lock is held. So a caller whose item went with someone else's group is answered at
    /// once, instead of waiting its turn for the lock behind every other caller (one thread
    /// wake-up after another, in a storm). It goes on until answered, since a group taken may
    /// not hold this item (a queue longer than a group).
    pub(crate) async fn answered<F, C, Fut>(&self, answer: &mut F, mut commit: C) -> F::Output
    where
        F: Future + Unpin,
        C: FnMut(Vec<T>) -> Fut,
        Fut: Future<Output = ()>,
    {
        loop {
            let leader = tokio::select! {
                biased;
                got = &mut *answer => return got,
                leader = self.leader.lock() => leader,
            };
            let group = self.drain();
            if group.is_empty() {
                // This caller's write stepped aside and waits for its job (see
                // `commit::begin`): no spinning on the lock meanwhile.
                drop(leader);
                tokio::select! {
                    biased;
                    got = &mut *answer => return got,
                    () = tokio::time::sleep(std::time::Duration::from_millis(5)) => {}
                }
                continue;
            }
            commit(group).await;
            drop(leader);
        }
    }

    fn drain(&self) -> Vec<T> {
        match self.waiting.lock() {
            Ok(mut waiting) => {
                let n = waiting.len().min(MAX_GROUP);
                waiting.drain(..n).collect()
            }
            Err(_) => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::ledger::group::{GroupWrite, Lock, Step, Ticket};
    use crate::store::Tx;
    use crate::Engine;

    /// A write that writes nothing and gives its number back.
    struct Number(usize);

    impl GroupWrite for Number {
        type Out = usize;

        fn lock(&self) -> Lock {
            Lock::Nothing
        }

        fn run<'t>(&'t self, _tx: &'t mut Tx) -> Step<'t, usize> {
            Box::pin(async move { Ok(self.0) })
        }
    }

    /// More writes queued than one group holds: each caller is answered, the last ones by a
    /// group of their own.
    #[tokio::test]
    async fn a_queue_longer_than_a_group_is_answered_to_the_last_write() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path().join("ledger.db")).await.unwrap();
        let queued: Vec<Ticket<usize>> = (0..MAX_GROUP + 44)
            .map(|n| engine.writes.queue(Number(n)).unwrap())
            .collect();
        for (n, ticket) in queued.into_iter().enumerate() {
            let answered = tokio::time::timeout(
                std::time::Duration::from_secs(60),
                engine.writes.outcome(ticket),
            );
            assert_eq!(answered.await.expect("answered").unwrap(), n);
        }
    }
}
