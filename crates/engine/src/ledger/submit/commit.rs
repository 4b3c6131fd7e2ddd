//! Committing a group of submits: a lone submit by one statement of its own, a larger group in
//! one statement and one read, or, when the database refuses that statement, a submit at a
//! time under savepoints; then what each submit is answered: the job holding its key, or why
//! it was refused.

use tokio::sync::Notify;

use crate::error::{Error, Result};
use crate::model::Job;
use crate::store::sqlite::WriterGuard;
use crate::store::{
    contracts as contract_rows, jobs as job_rows, providers as provider_rows, Db, Handle, Tx,
};

use crate::ledger::finish;

use super::offer::Offered;
use super::ToSubmit;

/// Commits the group, then answers each of its callers. The group's keys go in in one order,
/// (owner, key), so two hosts' groups that share keys wait for each other's index entries in
/// that order, never in a circle. On SQLite the group is offered while it waits for the writer
/// (see `offer.rs`): taken, it is answered by the one that took it.
pub(super) async fn commit_and_answer(
    db: &Db,
    work: &Notify,
    offered: &Offered,
    mut group: Vec<ToSubmit>,
) {
    group.sort_by(|a, b| (&a.owner, &a.key).cmp(&(&b.owner, &b.key)));
    let held = if matches!(db, Db::Sqlite(_)) {
        let Some((held, back)) = offered.wait_for_writer(db, group).await else {
            return;
        };
        group = back;
        held
    } else {
        Ok(None)
    };
    let committed = match held {
        Ok(held) => commit_group(db, held, &group).await,
        Err(e) => Err(e),
    };
    answer(work, group, committed);
}

/// Answers each submit of a group with what its commit gave it, or every one with the failure
/// that lost the group; wakes the executor when a job was created.
pub(super) fn answer(
    work: &Notify,
    group: Vec<ToSubmit>,
    committed: Result<Vec<Result<(Job, bool)>>>,
) {
    match committed {
        Ok(outcomes) => {
            if outcomes.iter().any(|o| matches!(o, Ok((_, false)))) {
                crate::wake(work);
            }
            for (to_submit, outcome) in group.into_iter().zip(outcomes) {
                let _ = to_submit.reply.send(outcome);
            }
        }
        Err(e) => {
            for to_submit in group {
                let _ = to_submit.reply.send(Err(e.clone()));
            }
        }
    }
}

/// A group of one commits on its own. A larger group commits in one write transaction: all its
/// jobs in one statement, then one read of the jobs holding its keys. When that statement
/// fails (one submit names a provider or contract that is not configured), the group is
/// committed again with a savepoint per submit, so the refusal answers its caller alone. The
/// outcomes in order; an error fails the whole group.
/// `held` is the SQLite writer, when the caller waited for it already.
async fn commit_group(
    db: &Db,
    held: Option<WriterGuard>,
    group: &[ToSubmit],
) -> Result<Vec<Result<(Job, bool)>>> {
    if let [alone] = group {
        return Ok(vec![submit_alone(db, held, alone).await]);
    }
    if let Some(outcomes) = commit_together(db, held, group).await? {
        return Ok(outcomes);
    }
    let mut tx = db.begin().await?;
    let outcome = steps(&mut tx, group).await;
    finish(tx, outcome).await
}

/// Each submit of `group` on `tx`, under a savepoint of its own (see [`submit_step`]): the
/// outcomes in order; an error fails them all.
pub(super) async fn steps(tx: &mut Tx, group: &[ToSubmit]) -> Result<Vec<Result<(Job, bool)>>> {
    let mut outcomes = Vec::with_capacity(group.len());
    for to_submit in group {
        outcomes.push(submit_step(tx, to_submit).await?);
    }
    Ok(outcomes)
}

/// The whole group in one statement and one read; `None`, with nothing committed, when the
/// database refused the statement.
async fn commit_together(
    db: &Db,
    held: Option<WriterGuard>,
    group: &[ToSubmit],
) -> Result<Option<Vec<Result<(Job, bool)>>>> {
    let ids: Vec<String> = group
        .iter()
        .map(|_| uuid::Uuid::now_v7().to_string())
        .collect();
    let rows: Vec<[&str; 5]> = group
        .iter()
        .zip(&ids)
        .map(|(p, id)| {
            [
                id.as_str(),
                p.owner.as_str(),
                p.key.as_str(),
                p.intent.fingerprint.as_str(),
                p.intent.stored.as_str(),
            ]
        })
        .collect();
    let rows = serde_json::to_string(&rows)
        .map_err(|e| Error::internal(format!("cannot write the group's rows: {e}")))?;
    let mut tx = db.begin_held(held).await?;
    let outcome = async {
        match job_rows::insert_many(&mut tx, &rows).await {
            Ok(_) => {}
            Err(sqlx::Error::Database(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
        let mut held = std::collections::HashMap::new();
        for row in job_rows::holders(&mut tx, &rows).await? {
            let job = row.into_job()?;
            held.insert((job.owner_id.clone(), job.idempotency_key.clone()), job);
        }
        Ok(Some(held))
    }
    .await;
    let held = match outcome {
        // Refused: rolled back before the group runs again, a submit at a time.
        Ok(None) => {
            tx.rollback().await?;
            return Ok(None);
        }
        Ok(Some(held)) => finish(tx, Ok(held)).await?,
        Err(e) => return finish(tx, Err(e)).await,
    };
    Ok(Some(
        group
            .iter()
            .zip(&ids)
            .map(|(p, id)| {
                held.get(&(p.owner.clone(), p.key.clone()))
                    .map(|job| (job.clone(), job.id != *id))
                    .ok_or_else(|| Error::internal("the key was taken, yet no job holds it"))
            })
            .collect(),
    ))
}

/// A lone submit, committed by the one call of `jobs::submit` on the writer: one autocommitted
/// `INSERT … ON CONFLICT DO NOTHING` on either backend (without `RETURNING` on SQLite). The
/// unique constraint arbitrates the key and the schema's triggers check the route's and the
/// contract's names inside the INSERT; only when it is refused are the names looked up, to say
/// which one. The answer comes after the commit has returned success.
async fn submit_alone(
    db: &Db,
    held: Option<WriterGuard>,
    to_submit: &ToSubmit,
) -> Result<(Job, bool)> {
    let mut writer = db.write_held(held).await?;
    // If the caller goes away while the statement runs, nothing was answered; and should a
    // transaction be open on the writer, it is rolled back before anything else runs there.
    writer.settle(false);
    let id = uuid::Uuid::now_v7().to_string();
    let outcome = job_rows::submit(&mut writer, &new_job(&id, to_submit)).await;
    if outcome.is_err() {
        // A safeguard: the autocommitted statement leaves no transaction open, but should one
        // be open on the SQLite writer, it ends here, before anything else runs there.
        job_rows::rollback(&mut writer).await;
    }
    writer.settle(true);
    match outcome {
        Ok(held) => holder(&mut writer, to_submit, &id, held).await,
        Err(e) => Err(refusal(&mut writer, to_submit, e).await),
    }
}

/// One submit inside a group's transaction, under a savepoint of its own: refused, it is
/// undone alone and answers only its caller. The outer error (a savepoint that cannot be
/// rolled back) fails the group.
async fn submit_step(tx: &mut Tx, to_submit: &ToSubmit) -> Result<Result<(Job, bool)>> {
    let id = uuid::Uuid::now_v7().to_string();
    // SQLite's statements take their savepoint themselves, in the same call.
    let outer = matches!(tx, Tx::Postgres(_));
    if outer {
        tx.savepoint().await?;
    }
    match job_rows::submit_step(tx, &new_job(&id, to_submit)).await {
        Ok(held) => {
            if outer {
                tx.release_savepoint().await?;
            }
            Ok(holder(tx, to_submit, &id, held).await)
        }
        Err(e) => {
            tx.rollback_to_savepoint().await?;
            tx.release_savepoint().await?;
            Ok(Err(refusal(tx, to_submit, e).await))
        }
    }
}

fn new_job<'a>(id: &'a str, to_submit: &'a ToSubmit) -> job_rows::NewJob<'a> {
    job_rows::NewJob {
        id,
        owner_id: &to_submit.owner,
        idempotency_key: &to_submit.key,
        fingerprint: &to_submit.intent.fingerprint,
        intent: &to_submit.intent.stored,
    }
}

/// The job holding the key after a submit's statement, with `true` (replayed) unless it is the
/// one this submit made (`id`). On PostgreSQL the holder may have committed after the
/// statement's snapshot: it is read then.
async fn holder(
    h: &mut impl Handle,
    to_submit: &ToSubmit,
    id: &str,
    held: Option<job_rows::JobRow>,
) -> Result<(Job, bool)> {
    let row = match held {
        Some(row) => row,
        None => job_rows::by_key(h, &to_submit.owner, &to_submit.key)
            .await?
            .ok_or_else(|| Error::internal("the key was taken, yet no job holds it"))?,
    };
    let job = row.into_job()?;
    let replayed = job.id != id;
    Ok((job, replayed))
}

/// What to answer for a submit whose statement failed: `invalid_input` naming the provider or
/// the contract that is not configured when one is not (the schema's check refused the job),
/// else the failure itself.
async fn refusal(h: &mut impl Handle, to_submit: &ToSubmit, e: sqlx::Error) -> Error {
    let names_refused = match &e {
        sqlx::Error::Database(db) => {
            db.kind() == sqlx::error::ErrorKind::CheckViolation
                // SQLite's SQLITE_CONSTRAINT_TRIGGER: a trigger's RAISE(ABORT).
                || db.code().as_deref() == Some("1811")
        }
        _ => false,
    };
    if !names_refused {
        return e.into();
    }
    match missing_name(h, to_submit).await {
        Ok(Some(missing)) => missing,
        Ok(None) => {
            let message = match &e {
                sqlx::Error::Database(db) => db.message().to_owned(),
                other => other.to_string(),
            };
            Error::invalid_input(
                "intent",
                format!(
                    "the intent names a provider or contract that is not configured: {message}"
                ),
            )
        }
        Err(lookup) => lookup,
    }
}

/// `invalid_input` naming the route's first provider or the contract that is not configured,
/// if one is not.
async fn missing_name(h: &mut impl Handle, to_submit: &ToSubmit) -> Result<Option<Error>> {
    let intent = &to_submit.intent;
    if let Some((i, name)) = provider_rows::first_missing(h, &intent.intent.route).await? {
        return Ok(Some(Error::invalid_input(
            format!("intent.route.{i}"),
            format!("no provider named {name} is configured"),
        )));
    }
    if let Some(name) = &intent.intent.contract {
        if contract_rows::get(h, name).await?.is_none() {
            return Ok(Some(Error::invalid_input(
                "intent.contract",
                format!("no contract named {name} is configured"),
            )));
        }
    }
    Ok(None)
}
