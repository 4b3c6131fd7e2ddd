//! Beginning and committing a group: the transaction that locks the group's jobs (a write
//! whose job another host holds steps aside), then one of two ways to commit: all writes
//! without savepoints, or, after one of them failed, each under a savepoint of its own.

use std::future::Future;
use std::pin::Pin;

use super::runs::{run_from, run_together};
use super::{take, Lock, Queued, ReplyOnCommit};
use crate::error::{Error, Result};
use crate::store::{jobs as job_rows, Db, Tx};

/// One transaction for the group; then every caller is answered with its outcome, or with the
/// failure that lost the group. Several writes run first without savepoints, and again with a
/// savepoint each if one of them fails.
pub(super) async fn commit_group(db: &Db, group: Vec<Queued>) {
    let group = if group.len() > 1 {
        match commit_unless_refused(db, group).await {
            Some(again) => again,
            None => return,
        }
    } else {
        group
    };
    commit_with_savepoints(db, group).await;
}

/// The group's write transaction, holding the locks of the jobs its writes concern (taken
/// in one statement, in id order, before any write runs: no write waits for a lock after
/// that, so two groups never wait for each other in a circle); if it cannot start, every
/// caller is answered with why. The statement never waits for another host: a write whose job
/// another transaction holds (a host at work on it, or frozen inside its transaction) steps
/// aside and is committed a moment later in a group of its own (`later`), so it holds up none
/// of this host's other writes (SPEC §14). The rest of the group goes on without it.
async fn begin(db: &Db, group: Vec<Queued>) -> Option<(Tx, Vec<Queued>)> {
    let (mut jobs, mut attempts) = (Vec::new(), Vec::new());
    for queued in &group {
        match &queued.lock {
            Lock::Job(id) => jobs.push(id.clone()),
            Lock::JobOf(id) => attempts.push(id.clone()),
            Lock::Nothing => {}
        }
    }
    let begun = async {
        let mut tx = db.begin().await?;
        let mut held = Vec::new();
        if !jobs.is_empty() || !attempts.is_empty() {
            held = job_rows::lock_free(&mut tx, &jobs, &attempts).await?;
        }
        Ok::<(Tx, Vec<(String, Option<String>)>), Error>((tx, held))
    };
    match begun.await {
        Ok((tx, held)) if held.is_empty() => Some((tx, group)),
        Ok((tx, held)) => {
            let (going, aside): (Vec<Queued>, Vec<Queued>) =
                group.into_iter().partition(|q| !is_held(&held, &q.lock));
            tokio::spawn(later(db.clone(), aside));
            if going.is_empty() {
                return None;
            }
            Some((tx, going))
        }
        Err(e) => {
            for queued in group {
                queued.refuse(e.clone());
            }
            None
        }
    }
}

/// How long writes that stepped aside wait before they try again.
const STEP_ASIDE: std::time::Duration = std::time::Duration::from_millis(50);

/// Writes that stepped aside, committed in a group of their own a moment later, apart from the
/// group lock: their callers wait for their answers as they would for the job's lock, and every
/// other write of this host goes on meanwhile. Boxed, as `commit_group` leads back here.
fn later(db: Db, aside: Vec<Queued>) -> Pin<Box<dyn Future<Output = ()> + Send>> {
    Box::pin(async move {
        if aside.is_empty() {
            return;
        }
        tokio::time::sleep(STEP_ASIDE).await;
        commit_group(&db, aside).await;
    })
}

/// Whether a write with `lock` concerns a job another transaction holds, among `held`
/// (`(job, the attempt it was asked for by)`).
fn is_held(held: &[(String, Option<String>)], lock: &Lock) -> bool {
    held.iter().any(|(job, attempt)| match lock {
        Lock::Job(id) => attempt.is_none() && job == id,
        Lock::JobOf(id) => attempt.as_deref() == Some(id.as_str()),
        Lock::Nothing => false,
    })
}

/// The group's writes in one transaction without savepoints, committed and answered; or, when
/// one of them fails, the transaction rolled back with nothing answered and the group given
/// back to run again.
async fn commit_unless_refused(db: &Db, group: Vec<Queued>) -> Option<Vec<Queued>> {
    let (mut tx, group) = begin(db, group).await?;
    let mut replies: Vec<ReplyOnCommit> = Vec::with_capacity(group.len());
    // Which writes a run's statement has already run for.
    let mut together = vec![false; group.len()];
    for at in 0..group.len() {
        let mut kept = true;
        if !together[at] {
            let run = run_from(&group, at, &together);
            if run.len() > 1 {
                let writes: Vec<&Queued> = run.iter().map(|&i| &group[i]).collect();
                kept = run_together(&mut tx, &writes).await.is_ok();
                for i in run {
                    together[i] = true;
                }
            }
        }
        if kept {
            let (keep, reply) = group[at].run(&mut tx).await;
            kept = keep;
            replies.push(reply);
        }
        if !kept {
            // Its first run's outcome and the others' are dropped unanswered, and what a run's
            // statement left for writes that did not run yet is forgotten with it.
            let _ = tx.rollback().await;
            for queued in &group {
                if let Some((_, slot)) = &queued.fast {
                    take(slot);
                }
            }
            return Some(group);
        }
    }
    let committed = tx.commit().await.map_err(Error::from);
    for reply in replies {
        reply(committed.clone());
    }
    None
}

/// One transaction for the group, a savepoint per write when there are several.
async fn commit_with_savepoints(db: &Db, group: Vec<Queued>) {
    let Some((mut tx, group)) = begin(db, group).await else {
        return;
    };
    let alone = group.len() == 1;
    let mut replies: Vec<ReplyOnCommit> = Vec::with_capacity(group.len());
    let mut rest = group.into_iter();
    let mut broken: Option<Error> = None;
    // Whether a savepoint is open and what was written since it is to be kept.
    let mut kept_since_savepoint = None;
    for queued in rest.by_ref() {
        if !alone {
            // A new savepoint for this write; an open one whose write failed was rolled back
            // to its start and serves again.
            let marked = match kept_since_savepoint {
                None => tx.savepoint().await,
                Some(true) => tx.next_savepoint().await,
                Some(false) => Ok(()),
            };
            if let Err(e) = marked {
                let e = Error::from(e);
                queued.refuse(e.clone());
                broken = Some(e);
                break;
            }
        }
        let (keep, reply) = queued.run(&mut tx).await;
        replies.push(reply);
        if alone {
            if !keep {
                // A refusal: nothing of it may stay, and nothing else is in the transaction.
                let _ = tx.rollback().await;
                for reply in replies {
                    reply(Ok(()));
                }
                return;
            }
            break;
        }
        kept_since_savepoint = Some(keep);
        if !keep {
            if let Err(e) = tx.rollback_to_savepoint().await {
                broken = Some(e.into());
                break;
            }
        }
    }
    let committed: Result<()> = match broken {
        Some(e) => Err(e),
        None => tx.commit().await.map_err(Error::from),
    };
    if let Err(e) = &committed {
        for queued in rest {
            queued.refuse(e.clone());
        }
    }
    for reply in replies {
        reply(committed.clone());
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use crate::error::Error;
    use crate::ledger::claim::{claim_in, ClaimNext};
    use crate::ledger::group::{GroupWrite, Lock, Step, Ticket};
    use crate::ledger::Claim;
    use crate::store::Tx;
    use crate::{Engine, JobStatus};

    fn queue_claim(engine: &Engine, id: &str) -> Ticket<Claim> {
        let claim = ClaimNext {
            job_id: id.to_owned(),
        };
        engine.writes.queue(claim).unwrap()
    }

    /// Claims its job, then refuses.
    struct ClaimThenRefuse(String);

    impl GroupWrite for ClaimThenRefuse {
        type Out = ();

        fn lock(&self) -> Lock {
            Lock::Nothing
        }

        fn run<'t>(&'t self, tx: &'t mut Tx) -> Step<'t, ()> {
            Box::pin(async move {
                claim_in(tx, &self.0).await?;
                Err(Error::internal("refused after writing"))
            })
        }
    }

    #[tokio::test]
    async fn a_write_that_fails_in_a_group_is_undone_alone() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path().join("ledger.db")).await.unwrap();
        let mut ids = Vec::new();
        for n in 0..3 {
            let intent = format!(r#"{{"route": ["sandbox"], "input": {{"n": {n}}}}}"#);
            ids.push(
                engine
                    .submit("local", &format!("k{n}"), &intent)
                    .await
                    .unwrap()
                    .job
                    .id,
            );
        }
        let first = queue_claim(&engine, &ids[0]);
        // Claims, then refuses: its attempt must not survive the group's commit.
        let refused = engine
            .writes
            .queue(ClaimThenRefuse(ids[1].clone()))
            .unwrap();
        let third = queue_claim(&engine, &ids[2]);
        engine.writes.lead().await;

        let writes = &engine.writes;
        let first = writes.outcome(first).await.unwrap();
        assert!(matches!(first, Claim::Attempt(_)));
        let refused = writes.outcome(refused).await.unwrap_err();
        assert_eq!(refused.code(), "internal");
        assert!(matches!(
            writes.outcome(third).await.unwrap(),
            Claim::Attempt(_)
        ));
        let status = |id: &str| {
            let (engine, id) = (engine.clone(), id.to_owned());
            async move { engine.job("local", &id).await.unwrap() }
        };
        // The group ran again with a savepoint each: what the others wrote is there once.
        let kept = status(&ids[0]).await;
        assert_eq!(kept.job.status, JobStatus::Running);
        assert_eq!(kept.attempts.len(), 1);
        let created = |events: &[crate::Event]| {
            events
                .iter()
                .filter(|e| e.kind == "attempt_created")
                .count()
        };
        assert_eq!(created(&kept.events), 1);
        let undone = status(&ids[1]).await;
        assert_eq!(undone.job.status, JobStatus::Queued);
        assert!(undone.attempts.is_empty());
        assert_eq!(status(&ids[2]).await.job.status, JobStatus::Running);
    }

    #[tokio::test]
    async fn claims_of_one_job_in_one_group_make_one_attempt() {
        let dir = tempfile::tempdir().unwrap();
        let engine = Engine::open(dir.path().join("ledger.db")).await.unwrap();
        let intent = r#"{"route": ["sandbox"], "input": {}}"#;
        let id = engine.submit("local", "once", intent).await.unwrap().job.id;
        let claims = engine
            .claim_many(&[id.clone(), id.clone(), id.clone()])
            .await
            .unwrap();
        let made = claims
            .iter()
            .filter(|c| matches!(c, Ok(Claim::Attempt(_))))
            .count();
        assert_eq!(made, 1, "{claims:?}");
        assert_eq!(engine.job("local", &id).await.unwrap().attempts.len(), 1);
    }
}
