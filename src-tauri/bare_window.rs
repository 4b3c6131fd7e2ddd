//! The app benchmark's baseline (`tests/bench_app.sh`): one Tauri window, built from the same
//! crates and the same window configuration as the app, on an essentially empty page. The page
//! reports its first paint through the app's own `first_paint` command, as the Jobs screen
//! does, so its cold start and memory are measured exactly as the app's are. It opens no
//! ledger and runs no executor: whatever the app costs beyond it is the app's own. It runs with
//! WebKit's defaults, or with the settings `ONEJOB_WEBVIEW` names (see `webview.rs`).

use std::borrow::Cow;
use std::process::ExitCode;

use tauri::utils::assets::{AssetKey, AssetsIter, CspHash};
use tauri::{App, Assets, Runtime};

/// The page: no framework, no style, one word.
const INDEX: &str = "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"UTF-8\" />\
<title>onejob</title><script src=\"/bare.js\" defer></script></head>\
<body>bare</body></html>\n";

/// Reports the first paint after the frame that shows the page, as the Jobs screen does.
const SCRIPT: &str = "requestAnimationFrame(() => setTimeout(() => \
window.__TAURI_INTERNALS__.invoke('first_paint').catch(() => undefined), 0));\n";

/// The page in place of the app's UI bundle.
struct BarePage;

impl<R: Runtime> Assets<R> for BarePage {
    fn setup(&self, _app: &App<R>) {}

    fn get(&self, key: &AssetKey) -> Option<Cow<'_, [u8]>> {
        match key.as_ref() {
            "/index.html" | "index.html" => Some(Cow::Borrowed(INDEX.as_bytes())),
            "/bare.js" | "bare.js" => Some(Cow::Borrowed(SCRIPT.as_bytes())),
            _ => None,
        }
    }

    fn iter(&self) -> Box<AssetsIter<'_>> {
        Box::new(
            [
                (
                    Cow::Borrowed("/index.html"),
                    Cow::Borrowed(INDEX.as_bytes()),
                ),
                (Cow::Borrowed("/bare.js"), Cow::Borrowed(SCRIPT.as_bytes())),
            ]
            .into_iter(),
        )
    }

    fn csp_hashes(&self, _html_path: &AssetKey) -> Box<dyn Iterator<Item = CspHash<'_>> + '_> {
        Box::new(std::iter::empty())
    }
}

fn main() -> ExitCode {
    // WebKit's own defaults, unless `ONEJOB_WEBVIEW` names settings (`default`: the app's).
    if std::env::var_os(onejob_app::webview::ENV).is_some() {
        onejob_app::webview::prepare(&onejob_app::webview::chosen());
    }
    // The app's configuration (window, CSP, capabilities), with this page for its UI.
    let mut context = tauri::generate_context!();
    context.set_assets(Box::new(BarePage));
    let result = tauri::Builder::default()
        .invoke_handler(tauri::generate_handler![onejob_app::commands::first_paint])
        .run(context);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("onejob-bare-window: {e}");
            ExitCode::FAILURE
        }
    }
}
