//! `onejob serve`: the HTTP API of SPEC §15 on this ledger, and the executor beside it.

use std::io::Write;

use onejob_engine::executor::{check_max_in_flight, Executor, ExecutorOptions};
use onejob_engine::{Engine, Error, Result};
use onejob_http::{Api, Limits};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::args::ServeArgs;
use crate::signals::Signals;

/// The largest `--max-connections`.
const MAX_CONNECTIONS: usize = 65_536;

/// Refuses what cannot be served before the ledger is opened: tokens must not cross a network
/// in clear, so an address beyond loopback needs TLS or the operator's word that a proxy ends it.
pub fn check(args: &ServeArgs) -> Result<()> {
    if !(1..=MAX_CONNECTIONS).contains(&args.max_connections) {
        return Err(Error::invalid_input(
            "max_connections",
            format!(
                "must be 1 to {MAX_CONNECTIONS}, not {}",
                args.max_connections
            ),
        ));
    }
    check_max_in_flight(args.concurrency)?;
    let tls = args.tls_cert.is_some();
    if !onejob_http::is_loopback(&args.listen) && !tls && !args.plain_http_behind_proxy {
        return Err(Error::invalid_input(
            "listen",
            format!(
                "{} is reachable beyond this machine and bearer tokens must not cross a network \\
                 in clear: give --tls-cert and --tls-key, or --plain-http-behind-proxy when a proxy \\
                 in front ends TLS",
                args.listen
            ),
        ));
    }
    Ok(())
}

/// Serves until SIGINT or SIGTERM, then stops accepting, answers what is in hand and lets the
/// executor's attempts in flight end; a second signal stops at once.
pub async fn run(engine: &Engine, args: ServeArgs) -> Result<Value> {
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => Some(onejob_http::tls_config(cert, key)?),
        _ => None,
    };
    let signals = Signals::listen()?;
    let (stopping_tx, stopping) = watch::channel(false);
    let limits = Limits {
        max_connections: args.max_connections,
        ..Limits::default()
    };
    let api = Api::new(engine.clone(), stopping)
        .await?
        .with_limits(&limits);
    // What weakens the promise on this ledger, said where the server starts (SPEC §14).
    let risks = engine.doctor().await?.risks;
    let listener = TcpListener::bind(args.listen).await.map_err(|e| {
        Error::invalid_input("listen", format!("cannot listen on {}: {e}", args.listen))
    })?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::internal(format!("the listener has no address: {e}")))?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let url = format!("{scheme}://{addr}");

    let executor = if args.no_worker {
        None
    } else {
        let options = ExecutorOptions {
            max_in_flight: args.concurrency,
            ..ExecutorOptions::default()
        };
        Some(Executor::new(engine.clone(), options)?)
    };
    let worker_id = executor.as_ref().map(|e| e.id().to_owned());
    let (stop_worker, worker_stop) = watch::channel(false);
    let worker = executor.map(|executor| {
        tokio::spawn(async move {
            let mut stop = worker_stop;
            executor
                .run(async move {
                    let _ = stop.wait_for(|s| *s).await;
                })
                .await;
        })
    });

    let mut out = std::io::stdout().lock();
    let mut start = json!({ "listening": url });
    if !risks.is_empty() {
        start["risks"] = serde_json::to_value(&risks)
            .map_err(|e| Error::internal(format!("cannot serialise the risks: {e}")))?;
    }
    writeln!(out, "{start}")
        .and_then(|()| out.flush())
        .map_err(|e| Error::internal(format!("cannot write to stdout: {e}")))?;
    drop(out);

    let router = onejob_http::router(api);
    let stop = async {
        signals.received(1).await;
        let _ = stopping_tx.send(true);
    };
    let served = tokio::select! {
        served = onejob_http::serve(listener, router, tls, limits, stop) => served,
        () = signals.received(2) => return Ok(stopped(&url, worker_id, true, 0)),
    };
    let _ = stop_worker.send(true);
    if let Some(worker) = worker {
        tokio::select! {
            _ = worker => {}
            () = signals.received(2) => return Ok(stopped(&url, worker_id, true, served.cut)),
        }
    }
    Ok(stopped(&url, worker_id, false, served.cut))
}

fn stopped(url: &str, worker: Option<String>, forced: bool, cut: usize) -> Value {
    json!({ "served": {
        "url": url, "stopped": true, "forced": forced, "worker": worker, "connections_cut": cut,
    } })
}
