//! SIGINT and SIGTERM (Ctrl-C elsewhere) for the long-running subcommands, counted so a
//! second one can mean "stop now".

use onejob_engine::Result;
use tokio::sync::watch;

/// Counts the stop signals received since [`Signals::listen`].
pub struct Signals {
    count: watch::Receiver<u32>,
}

impl Signals {
    /// Installs the handlers and starts counting. Once installed, a signal no longer ends the
    /// process by itself: the caller decides what each one means.
    pub fn listen() -> Result<Signals> {
        let mut source = Source::install()?;
        let (tx, count) = watch::channel(0u32);
        tokio::spawn(async move {
            loop {
                source.next().await;
                tx.send_modify(|n| *n += 1);
            }
        });
        Ok(Signals { count })
    }

    /// Resolves once `n` signals have been received in all.
    pub async fn received(&self, n: u32) {
        let mut count = self.count.clone();
        if count.wait_for(|c| *c >= n).await.is_err() {
            // The counting task is gone, so no further signal can arrive.
            std::future::pending::<()>().await;
        }
    }
}

/// The platform's stop signals.
struct Source {
    #[cfg(unix)]
    interrupt: tokio::signal::unix::Signal,
    #[cfg(unix)]
    terminate: tokio::signal::unix::Signal,
}

impl Source {
    fn install() -> Result<Source> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{signal, SignalKind};
            let listen = |kind| {
                signal(kind).map_err(|e| {
                    onejob_engine::Error::internal(format!("cannot listen for signals: {e}"))
                })
            };
            Ok(Source {
                interrupt: listen(SignalKind::interrupt())?,
                terminate: listen(SignalKind::terminate())?,
            })
        }
        #[cfg(not(unix))]
        Ok(Source {})
    }

    async fn next(&mut self) {
        #[cfg(unix)]
        {
            let received = tokio::select! {
                r = self.interrupt.recv() => r,
                r = self.terminate.recv() => r,
            };
            if received.is_none() {
                // The signal driver is gone: nothing more will be delivered.
                std::future::pending::<()>().await;
            }
        }
        #[cfg(not(unix))]
        {
            if tokio::signal::ctrl_c().await.is_err() {
                // No handler could be installed; Ctrl-C still ends the process by default.
                std::future::pending::<()>().await;
            }
        }
    }
}
