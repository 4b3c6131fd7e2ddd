//! `attempts`: tries under a job; one open per job by a partial unique index, every move
//! guarded by the state it expects.
//!
//! One file per concern, every operation re-exported here: `insert` (a new attempt), `read`
//! (attempts as they are, and the executor's queues of them), `moves` (guarded moves and the
//! other writes to an attempt), `lease` (its renewal, and the expired ones found for
//! recovery), `replay` (keyed replays' holds and windows).

mod insert;
mod lease;
mod moves;
mod read;
mod replay;

pub use super::rows::AttemptRow;
pub use insert::{insert_first, insert_first_many, insert_next, Inserted};
pub use lease::{expired_leases, lock_expired, renew_lease};
pub use moves::{
    charge, flag, moved, record_response_head, record_usage, send_many, MoveEvent, Patch, Sending,
};
pub use read::{
    by_id, for_job, last_for_job, lookup_wait, open_for_job, owned, pending, pending_left, spend,
    unknown, usage,
};
pub use replay::{hold_replay, release_replay, replay_held, replay_window, replayable};
