//! The PostgreSQL ledger's schema (`migrations/postgres/`, SPEC §14) on a real throwaway
//! cluster: the guarantees the database itself must give, whoever writes to it — one job per
//! key, one open attempt per job, a compare-and-swap that lets exactly one answer win under
//! READ COMMITTED, an append-only history, names checked in the submit's one statement, the
//! database's clock on every row, and migrations applied once however many processes start
//! together.

use std::path::Path;

use onejob_testkit::Postgres;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgPool, PgPoolOptions};
use sqlx::Row;

/// The PostgreSQL migrations, read from the folder at run time.
async fn migrator() -> Migrator {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../migrations/postgres");
    Migrator::new(dir)
        .await
        .expect("the PostgreSQL migrations read")
}

/// A fresh database on `cluster`, migrated.
async fn ledger(cluster: &Postgres, name: &str) -> PgPool {
    let url = cluster.database(name).expect("a database");
    let pool = PgPoolOptions::new()
        .max_connections(4)
        .connect(&url)
        .await
        .expect("connect");
    migrator().await.run(&pool).await.expect("migrated");
    pool
}

const JOB: &str = "01900000-0000-7000-8000-000000000001";
const FIRST: &str = "01900000-0000-7000-8000-0000000000a1";
const SECOND: &str = "01900000-0000-7000-8000-0000000000a2";

async fn insert_job(pool: &PgPool, id: &str, key: &str, route: &str) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status)
         VALUES ($1::uuid, 'local', $2, 'f', json_build_object('route', json_build_array($3::text), 'input', '{}'::json), 'queued')",
    )
    .bind(id)
    .bind(key)
    .bind(route)
    .execute(pool)
    .await
    .map(|_| ())
}

async fn insert_attempt(pool: &PgPool, id: &str, number: i32, state: &str) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO attempts (id, job_id, number, provider, state, job_version)
         VALUES ($1::uuid, $2::uuid, $3, 'sandbox', $4, 0)",
    )
    .bind(id)
    .bind(JOB)
    .bind(number)
    .bind(state)
    .execute(pool)
    .await
    .map(|_| ())
}

/// The SQLSTATE of a failed statement.
fn code(result: sqlx::Result<()>) -> String {
    match result {
        Ok(()) => panic!("the database accepted what it must refuse"),
        Err(sqlx::Error::Database(e)) => e.code().map(|c| c.into_owned()).unwrap_or_default(),
        Err(e) => panic!("not a database error: {e}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_database_keeps_one_job_per_key_and_one_open_attempt_per_job() {
    let cluster = Postgres::start().expect("a cluster");
    let pool = ledger(&cluster, "one").await;
    insert_job(&pool, JOB, "k", "sandbox")
        .await
        .expect("the first job");
    let again = insert_job(
        &pool,
        "01900000-0000-7000-8000-000000000002",
        "k",
        "sandbox",
    )
    .await;
    assert_eq!(
        code(again),
        "23505",
        "a second job for one key is a unique violation"
    );

    insert_attempt(&pool, FIRST, 1, "pending")
        .await
        .expect("the first attempt");
    for open in ["pending", "in_flight", "unknown"] {
        assert_eq!(
            code(insert_attempt(&pool, SECOND, 2, open).await),
            "23505",
            "a second {open} attempt"
        );
    }
    // Once the first is closed, the next may open.
    sqlx::query("UPDATE attempts SET state = 'failed' WHERE id = $1::uuid AND state = 'pending'")
        .bind(FIRST)
        .execute(&pool)
        .await
        .expect("close");
    insert_attempt(&pool, SECOND, 2, "pending")
        .await
        .expect("the next attempt");
    assert_eq!(
        code(insert_attempt(&pool, "01900000-0000-7000-8000-0000000000a3", 2, "failed").await),
        "23505",
        "numbers are unique per job"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_answers_racing_under_read_committed_let_exactly_one_win() {
    let cluster = Postgres::start().expect("a cluster");
    let pool = ledger(&cluster, "race").await;
    insert_job(&pool, JOB, "k", "sandbox").await.expect("job");
    sqlx::query("UPDATE jobs SET status = 'running' WHERE id = $1::uuid")
        .bind(JOB)
        .execute(&pool)
        .await
        .expect("running");
    // Two transactions take the compare-and-swap at once; the second waits on the first's row
    // lock, then re-reads the row under READ COMMITTED and finds the version moved on.
    let cas = "UPDATE jobs SET status = 'succeeded', result = $2::json, completed_by = $3::uuid,
                      version = version + 1, updated_at = now(), finished_at = now()
                WHERE id = $1::uuid AND version = 0 AND completed_by IS NULL";
    let mut a = pool.begin().await.expect("a");
    let mut b = pool.begin().await.expect("b");
    let won_a = sqlx::query(cas)
        .bind(JOB)
        .bind("{\"from\": \"a\"}")
        .bind(FIRST)
        .execute(&mut *a)
        .await
        .expect("a's swap")
        .rows_affected();
    let b_swap = tokio::spawn(async move {
        let rows = sqlx::query(cas)
            .bind(JOB)
            .bind("{\"from\": \"b\"}")
            .bind(SECOND)
            .execute(&mut *b)
            .await
            .expect("b's swap")
            .rows_affected();
        b.commit().await.expect("b commits");
        rows
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    assert!(!b_swap.is_finished(), "b waits for a's row lock");
    a.commit().await.expect("a commits");
    let won_b = b_swap.await.expect("b");
    assert_eq!((won_a, won_b), (1, 0));
    let row = sqlx::query(
        "SELECT result::text, completed_by::text, version FROM jobs WHERE id = $1::uuid",
    )
    .bind(JOB)
    .fetch_one(&pool)
    .await
    .expect("job");
    assert_eq!(
        row.get::<String, _>(0),
        "{\"from\": \"a\"}",
        "kept byte for byte"
    );
    assert_eq!(row.get::<String, _>(1), FIRST);
    assert_eq!(row.get::<i64, _>(2), 1, "counters are 64-bit since 0002");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_is_append_only_and_a_submit_writes_its_event_and_checks_its_names() {
    let cluster = Postgres::start().expect("a cluster");
    let pool = ledger(&cluster, "history").await;
    assert_eq!(
        code(insert_job(&pool, JOB, "k", "nowhere").await),
        "23514",
        "a route naming no configured provider"
    );
    insert_job(&pool, JOB, "k", "sandbox").await.expect("job");
    let event = sqlx::query(
        "SELECT kind, actor, detail ->> 'idempotency_key', at = (SELECT created_at FROM jobs)
           FROM job_events WHERE job_id = $1::uuid",
    )
    .bind(JOB)
    .fetch_one(&pool)
    .await
    .expect("the submitted event");
    assert_eq!(event.get::<String, _>(0), "submitted");
    assert_eq!(event.get::<String, _>(1), "user");
    assert_eq!(event.get::<String, _>(2), "k");
    assert!(event.get::<bool, _>(3));
    for change in [
        "UPDATE job_events SET kind = 'rewritten'",
        "DELETE FROM job_events",
        "TRUNCATE job_events",
    ] {
        let refused = sqlx::query(change).execute(&pool).await.map(|_| ());
        assert_eq!(code(refused), "23001", "{change}");
    }
    let providers: Vec<(String, bool)> =
        sqlx::query_as("SELECT provider, in_route FROM job_providers WHERE job_id = $1::uuid")
            .bind(JOB)
            .fetch_all(&pool)
            .await
            .expect("job providers");
    assert_eq!(providers, [("sandbox".to_owned(), true)]);
    let intent = "json_build_object('route', json_build_array('sandbox'), 'contract', 'nope')";
    let with_contract = sqlx::query(&format!(
        "INSERT INTO jobs (id, owner_id, idempotency_key, fingerprint, intent, status)
         VALUES ('01900000-0000-7000-8000-000000000003', 'local', 'c', 'f', {intent}, 'queued')"
    ))
    .execute(&pool)
    .await
    .map(|_| ());
    assert_eq!(
        code(with_contract),
        "23514",
        "a contract that is not configured"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_written_before_the_feed_sort_before_every_later_one_and_stay_unchanged() {
    let cluster = Postgres::start().expect("a cluster");
    let url = cluster.database("feed").expect("a database");
    let pool = PgPoolOptions::new()
        .max_connections(2)
        .connect(&url)
        .await
        .expect("connect");
    // A ledger as it was before the feed's migration (0006), with a history.
    let mut before = migrator().await;
    before.migrations = before
        .migrations
        .iter()
        .filter(|m| m.version < 6)
        .cloned()
        .collect::<Vec<_>>()
        .into();
    before.run(&pool).await.expect("migrated to 0005");
    insert_job(&pool, JOB, "k", "sandbox").await.expect("job");
    let file = "SELECT pg_relation_filenode('job_events')::bigint";
    let file_before: i64 = sqlx::query_scalar(file)
        .fetch_one(&pool)
        .await
        .expect("file");

    migrator().await.run(&pool).await.expect("migrated");
    let file_after: i64 = sqlx::query_scalar(file)
        .fetch_one(&pool)
        .await
        .expect("file");
    assert_eq!(file_before, file_after, "the table was not rewritten");
    insert_attempt(&pool, FIRST, 1, "pending")
        .await
        .expect("an attempt");
    sqlx::query(
        "INSERT INTO job_events (job_id, attempt_id, kind, actor) VALUES ($1::uuid, $2::uuid, 'attempt_created', 'executor')",
    )
    .bind(JOB)
    .bind(FIRST)
    .execute(&pool)
    .await
    .expect("a later event");
    let order: Vec<(String, String)> =
        sqlx::query_as("SELECT kind, tx::text FROM job_events ORDER BY tx, id")
            .fetch_all(&pool)
            .await
            .expect("the feed's order");
    assert_eq!(order.len(), 2, "{order:?}");
    assert_eq!(order[0], ("submitted".to_owned(), "0".to_owned()));
    assert_eq!(order[1].0, "attempt_created");
    assert_ne!(order[1].1, "0", "a new event carries its transaction");
    let refused = sqlx::query("UPDATE job_events SET tx = '1'")
        .execute(&pool)
        .await
        .map(|_| ());
    assert_eq!(code(refused), "23001", "an event's place is never changed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rows_are_stamped_by_the_database_clock() {
    let cluster = Postgres::start().expect("a cluster");
    let pool = ledger(&cluster, "clock").await;
    insert_job(&pool, JOB, "k", "sandbox").await.expect("job");
    let skew: f64 = sqlx::query_scalar(
        "SELECT abs(extract(epoch FROM (now() - created_at)))::float8 FROM jobs WHERE id = $1::uuid",
    )
    .bind(JOB)
    .fetch_one(&pool)
    .await
    .expect("created_at");
    assert!(
        skew < 60.0,
        "created_at is the database's time: {skew} s off"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrations_are_applied_once_however_many_start_together() {
    let cluster = Postgres::start().expect("a cluster");
    let url = cluster.database("together").expect("a database");
    let mut starting = Vec::new();
    for _ in 0..8 {
        let url = url.clone();
        starting.push(tokio::spawn(async move {
            let pool = PgPoolOptions::new()
                .max_connections(1)
                .connect(&url)
                .await
                .expect("connect");
            // sqlx holds a PostgreSQL advisory lock while it migrates: the others wait, then
            // find every migration applied.
            migrator().await.run(&pool).await.expect("migrated");
            pool.close().await;
        }));
    }
    for start in starting {
        start.await.expect("a start");
    }
    let pool = PgPoolOptions::new().connect(&url).await.expect("connect");
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&pool)
        .await
        .expect("migrations table");
    assert_eq!(
        applied,
        i64::try_from(migrator().await.iter().count()).expect("count")
    );
    let sandboxes: i64 =
        sqlx::query_scalar("SELECT count(*) FROM providers WHERE name = 'sandbox'")
            .fetch_one(&pool)
            .await
            .expect("providers");
    assert_eq!(sandboxes, 1);
}

/// `onejob_uuid` turns the text ids of nearly every statement into the key's type. It must be
/// inlined into the statements that call it, not called as a function on each execution: a
/// generic plan of a lookup by id shows its body, not the function. Its answers are the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_in_text_is_read_inline_and_only_a_canonical_uuid_names_anything() {
    let cluster = Postgres::start().expect("a cluster");
    let pool = ledger(&cluster, "inline").await;
    let mut conn = pool.acquire().await.expect("a connection");
    sqlx::query("SET plan_cache_mode = force_generic_plan")
        .execute(&mut *conn)
        .await
        .expect("generic plans");
    sqlx::raw_sql("PREPARE by_id(text) AS SELECT id FROM jobs WHERE id = onejob_uuid($1)")
        .execute(&mut *conn)
        .await
        .expect("prepare");
    let explain = format!("EXPLAIN (VERBOSE, COSTS OFF) EXECUTE by_id('{JOB}')");
    let plan: Vec<String> = sqlx::query_scalar(&explain)
        .fetch_all(&mut *conn)
        .await
        .expect("explain");
    let plan = plan.join("\n");
    assert!(
        !plan.contains("onejob_uuid"),
        "called, not inlined:\n{plan}"
    );
    assert!(plan.contains("CASE"), "{plan}");

    for (text, expected) in [
        (Some(JOB), Some(JOB)),
        (Some("01900000-0000-7000-8000-00000000000"), None),
        (Some("01900000-0000-7000-8000-0000000000A1"), None),
        (Some("not an id"), None),
        (None, None),
    ] {
        let got: Option<String> = sqlx::query_scalar("SELECT onejob_uuid($1)::text")
            .bind(text)
            .fetch_one(&mut *conn)
            .await
            .expect("onejob_uuid");
        assert_eq!(got.as_deref(), expected, "{text:?}");
    }
}

/// The PostgreSQL ledger keeps what each day holds by a trigger over `onejob_held`, the money
/// rule in SQL (migration 0014). Every state, with every failure kind, a settled cost or none,
/// moved from day to day, unpriced and priced, written on connections of a pool (each its own
/// part of a day): `onejob_held` agrees with the engine's rule, and the day's total with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ledgers_held_rule_is_the_money_rule() {
    use onejob_engine::testing::{held, FailureKind};
    use onejob_engine::AttemptState;
    let cluster = Postgres::start().expect("a cluster");
    let pool = ledger(&cluster, "held").await;
    insert_job(&pool, JOB, "k", "sandbox").await.expect("a job");
    insert_attempt(&pool, FIRST, 1, "pending")
        .await
        .expect("an attempt");
    let kinds = std::iter::once(None).chain(FailureKind::ALL.iter().map(|k| Some(k.as_str())));
    let mut step = 0;
    for kind in kinds {
        for state in AttemptState::ALL {
            for cost in [None, Some(7_i64)] {
                for currency in [None, Some("USD")] {
                    step += 1;
                    let day = format!("2026-01-{:02}", 1 + step % 28);
                    sqlx::query(
                        "UPDATE attempts SET state = $1, error_kind = $2, worst_nanos = 100, \
                         cost_nanos = $3, currency = $4, sent_at = ($5 || 'T10:00:00Z')::timestamptz \
                         WHERE id = $6::uuid",
                    )
                    .bind(state.as_str())
                    .bind(kind)
                    .bind(cost)
                    .bind(currency)
                    .bind(&day)
                    .bind(FIRST)
                    .execute(&pool)
                    .await
                    .expect("moved");
                    let column: i64 = sqlx::query_scalar(
                        "SELECT onejob_held(state, error_kind, currency, sent_at, worst_nanos, \
                         cost_nanos) FROM attempts WHERE id = $1::uuid",
                    )
                    .bind(FIRST)
                    .fetch_one(&pool)
                    .await
                    .expect("held");
                    let days: Vec<(String, i64)> = sqlx::query_as(
                        "SELECT day::text, sum(held_nanos)::bigint FROM charged_days \
                         GROUP BY day HAVING sum(held_nanos) <> 0",
                    )
                    .fetch_all(&pool)
                    .await
                    .expect("days");
                    let rule = match currency {
                        None => 0,
                        Some(_) => held(state, kind, 100, cost),
                    };
                    let what = format!("{state:?} {kind:?} cost {cost:?} {currency:?}");
                    assert_eq!(column, rule, "{what}");
                    let expected = match rule {
                        0 => vec![],
                        held => vec![(day.clone(), held)],
                    };
                    assert_eq!(days, expected, "{what}");
                }
            }
        }
    }
}
