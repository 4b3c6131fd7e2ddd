//! `jobs`: one row per intent; inserts arbitrated by `UNIQUE(owner_id, idempotency_key)`,
//! outcome writes guarded by `version`.
//!
//! One file per concern, every operation re-exported here: `submit` (inserts), `locks` (row
//! locks on PostgreSQL), `read` (one job, and the jobs that need a person), `search` (the
//! filtered list, built at run time), `cas` (guarded writes to a job's status and outcome),
//! `queue` (what the executor claims), `rows` (a job as a screen reads it). The whole row is
//! [`JobRow`], shared with `attempts`; this module uses `attempts`, never the reverse.

mod cas;
mod locks;
mod queue;
mod read;
mod rows;
mod search;
mod submit;

pub use crate::store::rows::JobRow;
pub use cas::{
    claim_answer, claim_answers, claim_result, flag, set_status, Answering, ClaimedAnswer, JobPatch,
};
pub use locks::{lock, lock_free, lock_skipping, rollback};
pub use queue::{backing_off, next_not_before, sendable, sendable_locking, set_backoff};
pub use read::{
    by_id, by_key, needing_attention, needing_attention_list, open_naming_contract,
    open_naming_provider, owned, shown, with_attempts,
};
pub use rows::{ShownRow, SummaryRow};
pub(in crate::store) use search::build;
pub use search::{count, Filter};
pub(crate) use search::{page, PageRow};
pub use submit::{holders, insert_many, submit, submit_step, NewJob};
