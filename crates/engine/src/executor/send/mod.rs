//! Sending one attempt: `pending → in_flight` (only one executor wins that), the request,
//! then the outcome. The soft timeout makes it `unknown` but keeps the connection until the
//! hard deadline, so a late answer still completes through the compare-and-swap.
//!
//! - this file: the send itself, from `pending → in_flight` to the exchange, the lease
//!   renewed meanwhile, and what is recorded of it.
//! - `prepare.rs`: before it: the request built, or why it cannot be sent.
//! - `settle.rs`: after it: the answer judged, and the outcome recorded.

mod prepare;
mod settle;

pub(super) use prepare::{Destination, NotSent, Prepared};

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use tokio::sync::OwnedSemaphorePermit;

use crate::attempt::AttemptState;
use crate::error::{Error, Result};
use crate::failure::FailureKind;
use crate::known::{self, EndRecord, KnownReceived, SentRecord};
use crate::ledger::ResponseHead;
use crate::model::{Attempt, Job};
use crate::money::Charge;
use crate::providers::http::{self, Classified, Head};
use crate::providers::ProviderConfig;

use super::Executor;

use settle::unknown_by;

impl Executor {
    /// Sends one attempt and records its outcome. A failure found before sending only ever
    /// fails a `pending` attempt; once `in_flight`, only the exchange decides.
    pub(super) async fn drive(
        &self,
        attempt: Attempt,
        job: Option<Job>,
        slot: Option<OwnedSemaphorePermit>,
    ) -> Result<()> {
        let engine = &self.inner.engine;
        let _slot = match slot {
            Some(slot) => slot,
            None => self
                .inner
                .permits
                .clone()
                .acquire_owned()
                .await
                .map_err(|e| Error::internal(e.to_string()))?,
        };
        // What is sent comes from the job's intent, which never changes.
        let job = match job {
            Some(job) => job,
            None => {
                self.persist("job", || engine.job_by_id(&attempt.job_id))
                    .await?
            }
        };
        // A client that cannot be built sends nothing: the attempt stays `pending`.
        let client = self.client()?;
        let prepared = self
            .prepare(client, &attempt, &job, Destination::Send)
            .await;
        let Prepared {
            request,
            target,
            sent,
            api_key,
        } = match prepared {
            Ok(prepared) => prepared,
            Err(NotSent::Storage(e)) => return Err(e),
            Err(NotSent::Unsendable(why)) => {
                // Nothing was sent by us; another executor may have sent it meanwhile, and
                // then the ledger refuses this (`pending → failed` only).
                match engine.fail_unsent(&attempt.id, why).await {
                    Ok(_) | Err(Error::InvalidTransition { .. }) => {}
                    Err(e) => return Err(e),
                }
                return Ok(());
            }
        };
        // At a provider with a price, the attempt is charged its worst case as it is sent.
        let charge = target.config.price.as_ref().map(|price| {
            let body = sent.as_ref().map_or("", |sent| sent.body.as_str());
            price.charge(body, target.config.context_window)
        });
        if !self.marked_sent(&attempt.job_id, &attempt.id, charge).await {
            return Ok(());
        }
        if let Some(sent) = &sent {
            self.record_sent(&attempt.id, sent).await;
        }
        let renewer = self.renew_lease(&attempt.id);
        let (head, came) = (OnceLock::new(), OnceLock::new());
        let (outcome, soft) = self
            .exchange(&attempt, request, &target.config, &head, &came)
            .await;
        renewer.abort();
        let soft = soft.then_some(FailureKind::SoftTimeout);
        match outcome {
            Some(outcome) => {
                let outcome = self
                    .judge(&attempt, outcome, &target.config, target.contract.as_ref())
                    .await?;
                if sent.is_some() {
                    if let Some(kind) = soft.or_else(|| unknown_by(&outcome, &attempt, &target)) {
                        let came = came.get();
                        self.record_end(
                            &attempt.id,
                            kind,
                            &target.config,
                            came,
                            api_key.as_deref(),
                        )
                        .await;
                    }
                }
                self.settle(&attempt, outcome, &target, head.get()).await
            }
            // The hard deadline passed: the connection is dropped and the attempt stays unknown.
            None => {
                if sent.is_some() {
                    let kind = soft.unwrap_or(FailureKind::SoftTimeout);
                    let came = came.get();
                    self.record_end(&attempt.id, kind, &target.config, came, api_key.as_deref())
                        .await;
                }
                Ok(())
            }
        }
    }

    /// Records what is sent for the attempt as the request leaves. A record that cannot be
    /// written is said on stderr and the attempt is sent all the same: it is already in flight
    /// under this executor's lease, and left unsent it would turn `unknown` for nothing.
    async fn record_sent(&self, attempt_id: &str, sent: &SentRecord) {
        let (engine, id) = (&self.inner.engine, &self.inner.id);
        if let Err(e) = self
            .persist("evidence", || engine.record_sent(attempt_id, id, sent))
            .await
        {
            eprintln!("onejob executor: attempt {attempt_id}: what was sent is not recorded: {e}");
        }
    }

    /// Records how an exchange ended without a trustworthy answer: the rule `kind` names, and
    /// the response's status, headers (secrets left out) and the body bytes that came.
    async fn record_end(
        &self,
        attempt_id: &str,
        kind: FailureKind,
        config: &ProviderConfig,
        came: Option<&Head>,
        api_key: Option<&str>,
    ) {
        let engine = &self.inner.engine;
        let end = EndRecord {
            rule: known::rule(kind, config.honours_idempotency_key).map(|r| r.code),
            received: came.map(|head| KnownReceived {
                status: head.status,
                headers: known::kept_headers(&head.headers, api_key),
                bytes: u32::try_from(head.received.load(Ordering::Relaxed)).unwrap_or(u32::MAX),
            }),
        };
        if let Err(e) = self
            .persist("evidence", || engine.record_end(attempt_id, &end))
            .await
        {
            eprintln!("onejob executor: attempt {attempt_id}: what came back is not recorded: {e}");
        }
    }

    /// Commits the attempt's `pending → in_flight` under this executor's lease; whether it
    /// may now be sent. Another executor sent it, or the job moved on: false, nothing is sent.
    /// A storage error says nothing of the commit: the server may have committed the move and
    /// then gone away before answering. The attempt is then this executor's in flight, and
    /// left so it would turn `unknown` when its lease ran out, though nothing was sent. So the
    /// lease is renewed, which holds only for an attempt this executor has in flight: renewed,
    /// the move was committed and the attempt is sent now, once; not renewed, the move was not
    /// (the attempt stays `pending`, for a later pass) or the attempt moved on.
    async fn marked_sent(&self, job_id: &str, attempt_id: &str, charge: Option<Charge>) -> bool {
        let (engine, id, lease) = (&self.inner.engine, &self.inner.id, self.inner.options.lease);
        match engine
            .mark_sent_of(Some(job_id), attempt_id, id, lease, charge)
            .await
        {
            // Kept back by a budget (SPEC §17): failed unsent, its job waiting.
            Ok(attempt) => attempt.state == AttemptState::InFlight,
            Err(Error::InvalidTransition { .. }) => false,
            Err(e @ Error::Storage { .. }) => {
                eprintln!("onejob executor: attempt {attempt_id}: {e}; was it marked sent?");
                self.persist("lease", || engine.renew_lease(attempt_id, id, lease))
                    .await
                    .unwrap_or_else(|e| {
                        eprintln!("onejob executor: attempt {attempt_id}: {e}");
                        false
                    })
            }
            Err(e) => {
                eprintln!("onejob executor: attempt {attempt_id}: {e}");
                false
            }
        }
    }

    /// The exchange with its soft timeout and hard deadline: its outcome, `None` when the hard
    /// deadline passed with none, and whether the soft timeout passed first. The response head,
    /// once it arrived, is in `seen` for the ledger and in `came` as it came.
    async fn exchange(
        &self,
        attempt: &Attempt,
        request: reqwest::RequestBuilder,
        config: &ProviderConfig,
        seen: &OnceLock<Arc<ResponseHead>>,
        came: &OnceLock<Head>,
    ) -> (Option<Classified>, bool) {
        let engine = &self.inner.engine;
        let (job_id, attempt_id) = (attempt.job_id.clone(), attempt.id.clone());
        // The head is queued for the next group commit and the body read meanwhile: the
        // answer's write, queued after it, commits with it or after it.
        let exchange = http::exchange(request, config, async |head: Head| {
            let _ = came.set(head.clone());
            let head = ResponseHead::new(head.request_id, Some(head.status));
            let _ = seen.set(head.clone());
            let queued = engine.queue_response_head(Some(&job_id), &attempt_id, head);
            let attempt_id = attempt_id.clone();
            let recorded = async move {
                match queued {
                    Ok(recorded) => recorded.await,
                    Err(e) => Err(e),
                }
            };
            tokio::spawn(async move {
                if let Err(e) = recorded.await {
                    eprintln!("onejob executor: attempt {attempt_id}: {e}");
                }
            });
        });
        tokio::pin!(exchange);
        let soft = Duration::from_millis(config.soft_timeout_ms);
        let hard = Duration::from_millis(config.hard_timeout_ms);
        if let Ok(outcome) = tokio::time::timeout(soft, &mut exchange).await {
            return (Some(outcome), false);
        }
        let why = FailureKind::SoftTimeout.because(format!(
            "no answer within {} ms; the request may have been processed",
            config.soft_timeout_ms
        ));
        // Recorded beside the wait, retried on storage errors; a person may have moved the
        // attempt already (abandoned it, say), and the answer is still awaited.
        let (this, sent) = (self.clone(), attempt.clone());
        tokio::spawn(async move {
            if let Err(e) = this.mark_unknown_if_in_flight(&sent, why).await {
                eprintln!("onejob executor: attempt {}: {e}", sent.id);
            }
        });
        let outcome = tokio::time::timeout(hard.saturating_sub(soft), &mut exchange)
            .await
            .ok();
        (outcome, true)
    }

    /// Renews the lease every `renew_every` while the answer is awaited. A renewal that fails
    /// on storage is tried again until the lease would really have expired; it stops when the
    /// attempt is no longer this executor's `in_flight` one.
    fn renew_lease(&self, attempt_id: &str) -> tokio::task::JoinHandle<()> {
        let (engine, id) = (self.inner.engine.clone(), self.inner.id.clone());
        let (attempt_id, options) = (attempt_id.to_owned(), self.inner.options.clone());
        tokio::spawn(async move {
            let mut held_until = Instant::now() + options.lease;
            let mut every = options.renew_every;
            loop {
                tokio::time::sleep(every).await;
                let asked = Instant::now();
                match engine.renew_lease(&attempt_id, &id, options.lease).await {
                    Ok(true) => {
                        held_until = asked + options.lease;
                        every = options.renew_every;
                    }
                    // It left `in_flight` (unknown, answered): nothing left to hold.
                    Ok(false) => break,
                    Err(e) if Instant::now() < held_until => {
                        eprintln!("onejob executor: lease of {attempt_id}: {e}; retrying");
                        every = (options.renew_every / 4).max(Duration::from_millis(10));
                    }
                    Err(_) => break,
                }
            }
        })
    }
}
