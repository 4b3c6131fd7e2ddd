//! How many attempts the app's executor sends at once: the Settings screen's "Attempts sent
//! at once", as `onejob worker --concurrency N` is for a worker. Kept as one line in
//! `<config dir>/dev.onejob.app/concurrency`, read when the app starts, and applied to the
//! running executor as soon as it is changed.

use std::path::PathBuf;

use onejob_engine::error::StorageKind;
use onejob_engine::executor::{check_max_in_flight, DEFAULT_MAX_IN_FLIGHT};
use onejob_engine::Error;

/// Where the setting is kept.
pub fn file() -> PathBuf {
    dirs::config_dir()
        .unwrap_or_else(|| PathBuf::from("."))
        .join(onejob_engine::APP_IDENTIFIER)
        .join("concurrency")
}

/// The saved setting, or the executor's default when none was saved. A file that does not
/// hold a count the executor accepts (edited by hand, say) is reported once and ignored.
pub fn saved() -> u32 {
    let default = u32::try_from(DEFAULT_MAX_IN_FLIGHT).unwrap_or(32);
    let Ok(text) = std::fs::read_to_string(file()) else {
        return default;
    };
    match text.trim().parse::<u32>() {
        Ok(n) if check_max_in_flight(n as usize).is_ok() => n,
        _ => {
            eprintln!(
                "onejob: {} does not hold a count of attempts to send at once; sending {default} at once",
                file().display()
            );
            default
        }
    }
}

/// Checks and saves `n`; the executor's `invalid_input` (field `concurrency`) when it is out
/// of range, with nothing saved.
pub fn save(n: u32) -> Result<(), Error> {
    check_max_in_flight(n as usize)?;
    let file = file();
    let storage = |e: std::io::Error| {
        crate::ledger::storage(
            StorageKind::Failed,
            format!("cannot save {}: {e}", file.display()),
        )
    };
    if let Some(dir) = file.parent() {
        std::fs::create_dir_all(dir).map_err(storage)?;
    }
    std::fs::write(&file, format!("{n}\n")).map_err(storage)
}
