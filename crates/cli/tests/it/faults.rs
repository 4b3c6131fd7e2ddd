//! A shared PostgreSQL ledger survives its database's faults and its hosts' freezes (SPEC
//! §14), simulated with processes on a cluster each test starts itself: every connection of
//! the ledger terminated, the server restarted as a crash would, and a worker stopped with
//! SIGSTOP while it holds a transaction open. The providers are `onejob sandbox` processes on
//! 127.0.0.1, which count every request they see.

use crate::common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::processes::{
    add_http_provider, between_ms, detail, details, intent_for, poll, signal, submit_many, Running,
    SandboxProcess,
};
use common::{id, Ledger};
use onejob_testkit::Postgres;
use serde_json::{json, Value};

/// The bound on each step of another host's work while one host is frozen.
const SECOND_MS: i64 = 1000;

/// Jobs waiting when a fault test's worker starts.
const QUEUED: usize = 40;

/// What a stream of submits from other processes got while the database was faulted.
#[derive(Default)]
struct Submits {
    /// The ids of the jobs acknowledged (exit 0).
    acknowledged: Vec<String>,
    /// How many were refused with `storage` while the database was away.
    refused: usize,
}

/// Submits a new job every 50 ms until `stop`; each acknowledged or refused with `storage`,
/// nothing else.
fn submit_until(ledger: &Ledger, stop: &AtomicBool) -> Submits {
    let mut submits = Submits::default();
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let key = format!("live-{n}");
        let intent = intent_for("shared", json!({ "live": n }));
        let run = ledger.run(&["submit", "--key", &key, "--intent", &intent]);
        if run.code == 0 {
            submits.acknowledged.push(id(&run.ok()["job"]));
        } else {
            let error = run.err(1);
            assert_eq!(error["code"], "storage", "{run:?}");
            submits.refused += 1;
        }
        n += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    submits
}

/// A worker with attempts in flight and submits arriving while `fault` strikes the database;
/// then every acknowledged job exists and succeeds, each reached the provider exactly once, and
/// the worker never exited.
fn lose_nothing_and_send_nothing_twice(database: &str, fault: impl FnOnce(&mut Postgres)) {
    let mut postgres = Postgres::start().expect("a PostgreSQL cluster");
    let ledger = Ledger::at(&postgres.database(database).expect("a database"));
    let sandbox = SandboxProcess::start(&ledger, json!({ "latency_ms": 300, "jitter_ms": 300 }));
    add_http_provider(&ledger, "shared", &sandbox.url, 30_000, 60_000, json!({}));
    let mut jobs = submit_many(&ledger, QUEUED, "shared");
    let mut worker = Running::spawn(&ledger, &["worker", "--concurrency", "8"]);
    poll(Duration::from_secs(60), "attempts in flight", || {
        assert!(worker.is_running(), "{} exited", worker.what);
        (sandbox.log().len() >= 8).then_some(())
    });

    let stop = AtomicBool::new(false);
    let submits = std::thread::scope(|s| {
        let submitting = s.spawn(|| submit_until(&ledger, &stop));
        std::thread::sleep(Duration::from_millis(500));
        fault(&mut postgres);
        // Submits go on while everything reconnects.
        std::thread::sleep(Duration::from_secs(3));
        stop.store(true, Ordering::SeqCst);
        submitting.join().expect("the submitting thread")
    });
    assert!(worker.is_running(), "{} exited", worker.what);
    assert!(
        !submits.acknowledged.is_empty(),
        "no submit was acknowledged"
    );
    jobs.extend(submits.acknowledged.iter().cloned());

    let deadline = Instant::now() + Duration::from_secs(180);
    loop {
        assert!(worker.is_running(), "{} exited", worker.what);
        let unsettled: Vec<Value> = details(&ledger, &jobs)
            .into_iter()
            .filter(|d| d["job"]["status"] != "succeeded")
            .collect();
        if unsettled.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "every job succeeded: not within 180 s; {} did not, the first of them: {:#}\n\
             the worker's stderr: {}",
            unsettled.len(),
            unsettled[0],
            worker.stderr()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let keys = sandbox.keys();
    let distinct: HashSet<&String> = keys.iter().collect();
    assert_eq!(
        distinct.len(),
        keys.len(),
        "a request reached the provider twice"
    );
    // Every acknowledged job was sent. A submit refused with `storage` may still have been
    // committed (the server went away after the commit, before the answer): such a job exists,
    // was sent once like any other, and succeeded.
    let acknowledged: HashSet<&String> = jobs.iter().collect();
    assert!(
        acknowledged.is_subset(&distinct),
        "one request per acknowledged job, keyed by the job's id: {:?} never sent",
        acknowledged.difference(&distinct).collect::<Vec<_>>()
    );
    let unacknowledged: Vec<String> = distinct
        .difference(&acknowledged)
        .map(|id| (*id).clone())
        .collect();
    assert!(
        unacknowledged.len() <= submits.refused,
        "{} jobs sent that no submit made: {unacknowledged:?}",
        unacknowledged.len()
    );
    for detail in details(&ledger, &unacknowledged) {
        assert_eq!(detail["job"]["status"], "succeeded", "{detail}");
    }
    assert!(worker.is_running(), "{} exited", worker.what);
    println!(
        "{database}: {} jobs, {} submitted during the fault ({} refused with storage meanwhile), \
         each sent once and succeeded",
        jobs.len(),
        submits.acknowledged.len(),
        submits.refused
    );
}

#[test]
fn terminated_connections_mid_flight_lose_nothing_and_send_nothing_twice() {
    lose_nothing_and_send_nothing_twice("terminated", |postgres| {
        for _ in 0..3 {
            let cut = postgres
                .sql(
                    "terminated",
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
                     WHERE datname = 'terminated' AND pid <> pg_backend_pid()",
                )
                .expect("terminate the ledger's connections");
            assert!(cut.trim().parse::<u32>().is_ok_and(|n| n > 0), "{cut}");
            std::thread::sleep(Duration::from_millis(1500));
        }
    });
}

#[test]
fn a_postgres_restart_mid_flight_loses_nothing_and_sends_nothing_twice() {
    lose_nothing_and_send_nothing_twice("restarted", |postgres| {
        postgres
            .restart_immediately()
            .expect("pg_ctl restart -m immediate");
    });
}

/// Runs a command of the ledger to its end, at most `limit`; its stdout document and how
/// long it took.
fn timed(ledger: &Ledger, args: &[&str], limit: Duration) -> (Value, Duration) {
    let started = Instant::now();
    let mut run = Running::spawn(ledger, args);
    let done = run.wait(limit);
    let took = started.elapsed();
    assert_eq!(done.code, 0, "{} failed: {done:?}", run.what);
    (common::parse(&done.stdout), took)
}

/// One row of `psql`'s unaligned output, trimmed; empty when there is none.
fn one(postgres: &Postgres, database: &str, sql: &str) -> String {
    postgres.sql(database, sql).expect(sql).trim().to_owned()
}

#[test]
fn a_host_frozen_inside_a_transaction_holds_up_no_other_host() {
    const DB: &str = "frozen";
    let postgres = Postgres::start().expect("a PostgreSQL cluster");
    let ledger = Ledger::at(&postgres.database(DB).expect("a database"));
    let slow = SandboxProcess::start(&ledger, json!({ "latency_ms": 1500, "jitter_ms": 0 }));
    let fast = SandboxProcess::start(&ledger, json!({ "latency_ms": 5, "jitter_ms": 0 }));
    add_http_provider(&ledger, "slow", &slow.url, 30_000, 60_000, json!({}));
    add_http_provider(&ledger, "fast", &fast.url, 30_000, 60_000, json!({}));

    // Before anything freezes: how long a submit and a read take here.
    let intent = intent_for("slow", json!({ "frozen": true }));
    let (submitted, submit_before) = timed(
        &ledger,
        &["submit", "--key", "frozen", "--intent", &intent],
        Duration::from_secs(30),
    );
    let frozen_job = id(&submitted["job"]);
    let (_, read_before) = timed(&ledger, &["job", &frozen_job], Duration::from_secs(30));

    // The first worker sends the job. While its answer is on the way, a person's cancel on
    // another host waits inside its transaction for the job's row, which a transaction of the
    // test's holds; that host freezes there. (An executor never waits for a row another host
    // holds: its write steps aside and is tried again, as the first worker's answer will.)
    let mut first = Running::spawn(&ledger, &["worker"]);
    poll(Duration::from_secs(60), "the frozen job sent", || {
        assert!(first.is_running(), "{} exited", first.what);
        (!slow.log().is_empty()).then_some(())
    });
    let mut holder = postgres.session(DB).expect("a psql session");
    holder
        .send(&format!(
            "BEGIN; SELECT 1 FROM jobs WHERE id = '{frozen_job}' FOR UPDATE;"
        ))
        .expect("hold the job's row");
    let mut frozen = Running::spawn(&ledger, &["cancel", &frozen_job]);
    let waiting = poll(
        Duration::from_secs(30),
        "the person's cancel waiting inside a transaction",
        || {
            let pid = one(
                &postgres,
                DB,
                "SELECT pid FROM pg_stat_activity WHERE datname = 'frozen' \
                 AND wait_event_type = 'Lock' AND state = 'active' \
                 AND application_name NOT LIKE 'psql%' LIMIT 1",
            );
            (!pid.is_empty()).then_some(pid)
        },
    );
    // Frozen there; then the test lets go of the row: the host's server side runs on and is
    // left idle in its transaction, holding the job's row.
    signal(&frozen, "STOP");
    holder.send("COMMIT;").expect("let go of the row");
    poll(
        Duration::from_secs(30),
        "the frozen host idle in its transaction",
        || {
            let state = one(
                &postgres,
                DB,
                &format!("SELECT state FROM pg_stat_activity WHERE pid = {waiting}"),
            );
            (state == "idle in transaction").then_some(())
        },
    );
    let frozen_at = Instant::now();

    // Another process's submit and read, and a second worker's claim and completion of a new
    // job, each within a second.
    let limit = Duration::from_secs(60);
    let (new, submit_frozen) = timed(
        &ledger,
        &[
            "submit",
            "--key",
            "new",
            "--intent",
            &intent_for("fast", json!({ "new": true })),
        ],
        limit,
    );
    let new_job = id(&new["job"]);
    let (_, read_frozen) = timed(&ledger, &["job", &frozen_job], limit);
    let mut second = Running::spawn(&ledger, &["worker"]);
    let settled = poll(limit, "the new job succeeded", || {
        assert!(second.is_running(), "{} exited", second.what);
        let detail = detail(&ledger, &new_job);
        (detail["job"]["status"] == "succeeded").then_some(detail)
    });
    let attempt = &settled["attempts"][0];
    let claimed_ms = between_ms(&settled["job"]["created_at"], &attempt["created_at"]);
    let completed_ms = between_ms(&attempt["created_at"], &attempt["finished_at"]);
    assert!(
        submit_frozen < Duration::from_secs(1),
        "a submit took {submit_frozen:?} while a host was frozen ({submit_before:?} before)"
    );
    assert!(
        read_frozen < Duration::from_secs(1),
        "a read took {read_frozen:?} while a host was frozen ({read_before:?} before)"
    );
    // The new job waited for the second worker to start; its claim is timed on the next.
    println!("the first new job was claimed {claimed_ms} ms after its submit");
    assert!(
        completed_ms < SECOND_MS,
        "the second worker completed the new job {completed_ms} ms after claiming it"
    );
    let new_again = intent_for("fast", json!({ "again": true }));
    let (again, _) = timed(
        &ledger,
        &["submit", "--key", "again", "--intent", &new_again],
        limit,
    );
    let again_job = id(&again["job"]);
    let again = poll(limit, "a job submitted to a running worker", || {
        let detail = detail(&ledger, &again_job);
        (detail["job"]["status"] == "succeeded").then_some(detail)
    });
    let attempt = &again["attempts"][0];
    let claimed_ms = between_ms(&again["job"]["created_at"], &attempt["created_at"]);
    let again_completed_ms = between_ms(&attempt["created_at"], &attempt["finished_at"]);
    // The ledger's change feed wakes a running worker on another process's submit (SPEC §12:
    // within a second).
    assert!(
        claimed_ms < SECOND_MS,
        "the running second worker claimed a new job {claimed_ms} ms after its submit"
    );
    assert!(
        again_completed_ms < SECOND_MS,
        "the second worker completed it {again_completed_ms} ms after claiming it"
    );

    // The database ends the frozen transaction after 10 s idle, and the cancel with it; the
    // first worker's answer, which stepped aside meanwhile, then settles the job, and nothing was
    // sent twice. Thawed, the frozen host finds its connection gone and says so.
    poll(
        Duration::from_secs(30),
        "the frozen transaction ended",
        || {
            let gone = one(
                &postgres,
                DB,
                &format!("SELECT count(*) FROM pg_stat_activity WHERE pid = {waiting}"),
            );
            (gone == "0").then_some(())
        },
    );
    let ended_after = frozen_at.elapsed();
    signal(&frozen, "CONT");
    let thawed = frozen.wait(Duration::from_secs(60));
    assert_ne!(
        thawed.code, 0,
        "the cancel's transaction was ended: {thawed:?}"
    );
    poll(limit, "the frozen job succeeded", || {
        assert!(first.is_running(), "{} exited", first.what);
        let detail = detail(&ledger, &frozen_job);
        (detail["job"]["status"] == "succeeded").then_some(())
    });
    assert_eq!(slow.keys(), vec![frozen_job.clone()], "sent once");
    let mut fast_keys = fast.keys();
    fast_keys.sort();
    let mut expected = vec![new_job.clone(), again_job.clone()];
    expected.sort();
    assert_eq!(fast_keys, expected, "each sent once");
    for job in details(&ledger, &[frozen_job, new_job, again_job]) {
        assert_eq!(job["job"]["status"], "succeeded", "{job}");
    }
    assert!(first.is_running(), "{} exited", first.what);
    assert!(second.is_running(), "{} exited", second.what);
    println!(
        "with a host frozen in a transaction: submit {submit_frozen:?} ({submit_before:?} \
         before), read {read_frozen:?} ({read_before:?} before), a running worker's claim \
         {claimed_ms} ms and completion {again_completed_ms} ms; the frozen transaction ended \
         {ended_after:?} after the freeze"
    );
}

/// Waits for each of `runs` to exit, at most `limit` from `since`; how long after `since` each
/// did.
fn exits(runs: &mut [&mut Running], since: Instant, limit: Duration) -> Vec<Duration> {
    let mut exited: Vec<Option<Duration>> = vec![None; runs.len()];
    while exited.iter().any(Option::is_none) {
        for (run, exit) in runs.iter_mut().zip(exited.iter_mut()) {
            if exit.is_none() && !run.is_running() {
                *exit = Some(since.elapsed());
            }
        }
        let waiting: Vec<&str> = runs
            .iter()
            .zip(&exited)
            .filter(|(_, exit)| exit.is_none())
            .map(|(run, _)| run.what.as_str())
            .collect();
        assert!(
            since.elapsed() < limit,
            "still running {limit:?} after the server stopped answering: {waiting:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    exited.into_iter().flatten().collect()
}

/// The `error` object a failed run printed on its stderr.
fn error_of(run: &mut Running) -> Value {
    let done = run.wait(Duration::from_secs(5));
    assert_eq!(done.code, 1, "{} exited {}", run.what, done.code);
    let stderr = run.stderr();
    let doc: Value = serde_json::from_str(stderr.trim())
        .unwrap_or_else(|e| panic!("{} printed no error ({e}): {stderr}", run.what));
    doc["error"].clone()
}

#[test]
fn a_server_that_stops_answering_is_noticed_in_seconds() {
    const DB: &str = "silent";
    /// How soon a process must notice: seconds, where the OS's TCP timeouts take minutes.
    const NOTICED_WITHIN: Duration = Duration::from_secs(10);
    let mut postgres = Postgres::start().expect("a PostgreSQL cluster");
    let ledger = Ledger::at(&postgres.database(DB).expect("a database"));
    let sandbox = SandboxProcess::start(&ledger, json!({ "latency_ms": 4000, "jitter_ms": 0 }));
    add_http_provider(&ledger, "shared", &sandbox.url, 30_000, 60_000, json!({}));
    let intent = |name: &str| intent_for("shared", json!({ "name": name }));
    let in_flight = id(&ledger.submit("in-flight", &intent("in-flight"))["job"]);

    // A submit from another process waits on a key that a transaction of another host holds:
    // a wait on a lock, which goes on past the guard's patience while the server answers.
    let mut holder = postgres.session(DB).expect("a psql session");
    holder
        .send(
            "BEGIN; INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status) \
             SELECT gen_random_uuid(), owner_id, 'held', fingerprint, intent, 'queued' \
             FROM jobs LIMIT 1;",
        )
        .expect("hold a key");
    poll(Duration::from_secs(30), "the key held", || {
        let holding = one(
            &postgres,
            DB,
            "SELECT count(*) FROM pg_stat_activity WHERE datname = 'silent' \
             AND state = 'idle in transaction' AND application_name LIKE 'psql%'",
        );
        (holding == "1").then_some(())
    });
    let mut held = Running::spawn(
        &ledger,
        &["submit", "--key", "held", "--intent", &intent("held")],
    );
    poll(
        Duration::from_secs(30),
        "the submit waiting on the key",
        || {
            assert!(held.is_running(), "{} exited", held.what);
            let waiting = one(
                &postgres,
                DB,
                "SELECT count(*) FROM pg_stat_activity WHERE datname = 'silent' \
             AND wait_event_type = 'Lock' AND application_name = 'onejob'",
            );
            (waiting == "1").then_some(())
        },
    );
    std::thread::sleep(Duration::from_secs(5));
    assert!(
        held.is_running(),
        "a submit waiting on a lock was given up on while the server answered: {}",
        held.stderr()
    );

    // A worker sends the first job; while its answer is on the way, every process of the
    // server stops: connections stay open and nothing answers on them.
    let mut worker = Running::spawn(&ledger, &["worker"]);
    poll(Duration::from_secs(60), "an attempt in flight", || {
        assert!(worker.is_running(), "{} exited", worker.what);
        (!sandbox.log().is_empty()).then_some(())
    });
    postgres.freeze().expect("the cluster frozen");
    let frozen_at = Instant::now();
    let mut fresh = Running::spawn(
        &ledger,
        &["submit", "--key", "fresh", "--intent", &intent("fresh")],
    );
    let took = exits(&mut [&mut held, &mut fresh], frozen_at, NOTICED_WITHIN);
    let (held_took, fresh_took) = (took[0], took[1]);
    let error = error_of(&mut held);
    assert_eq!(error["code"], "storage", "{error}");
    let message = error["message"].as_str().unwrap_or_default();
    assert!(message.contains("not answering"), "{message}");
    let error = error_of(&mut fresh);
    assert_eq!(error["code"], "storage", "{error}");
    assert!(worker.is_running(), "{} exited", worker.what);

    // Thawed, the worker settles its job; the key is recorded once however the submit that
    // lost its answer fared; new work goes through; nothing was sent twice.
    let frozen_for = frozen_at.elapsed();
    postgres.thaw().expect("the cluster thawed");
    drop(holder);
    poll(
        Duration::from_secs(60),
        "the job in flight succeeded",
        || {
            assert!(worker.is_running(), "{} exited", worker.what);
            (detail(&ledger, &in_flight)["job"]["status"] == "succeeded").then_some(())
        },
    );
    let held_job = id(&ledger.submit("held", &intent("held"))["job"]);
    let after = id(&ledger.submit("after", &intent("after"))["job"]);
    poll(Duration::from_secs(60), "every job succeeded", || {
        assert!(worker.is_running(), "{} exited", worker.what);
        let settled = details(&ledger, &[held_job.clone(), after.clone()])
            .iter()
            .all(|d| d["job"]["status"] == "succeeded");
        settled.then_some(())
    });
    let mut keys = sandbox.keys();
    keys.sort();
    let mut expected = vec![in_flight, held_job, after];
    expected.sort();
    assert_eq!(keys, expected, "each job sent once");
    assert!(worker.is_running(), "{} exited", worker.what);
    println!(
        "with the server frozen for {frozen_for:?}: a submit in flight failed with storage \
         {held_took:?} after the freeze, a new submit {fresh_took:?} after; the worker ran on"
    );
}
