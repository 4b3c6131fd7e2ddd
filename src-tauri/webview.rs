//! WebKitGTK's settings for the app's window, given as the environment WebKit reads when it
//! starts, so they hold from the window's first frame in every WebKit process.
//!
//! `ONEJOB_WEBVIEW` (a comma-separated list of the names in [`Setting`], `none`, or `default`
//! for the app's own choice) replaces the app's own choice, [`DEFAULT`], so the app benchmark
//! (`tests/bench_app.sh`) can measure each setting alone beside WebKit's defaults in the same
//! run, and give the bare window the app's settings. A variable already set in the
//! app's environment is left as it is. docs/perf/window.md has the figures behind [`DEFAULT`]
//! (decided in docs/adr/, record 0022).

/// The environment variable that replaces [`DEFAULT`].
pub const ENV: &str = "ONEJOB_WEBVIEW";

/// One setting the window's WebKit may be given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Setting {
    /// No accelerated compositing (`WEBKIT_DISABLE_COMPOSITING_MODE=1`, what the
    /// hardware-acceleration policy "never" does, but from the web process's start): the page
    /// is drawn by the CPU, with no compositor's layers and buffers in the web process, about
    /// 100 MiB less with 100,000 jobs. The window's content is a document of text and boxes;
    /// nothing in it needs the GPU. (WebDriver's Take Screenshot never returns on such a page
    /// at rest, so the end-to-end harness reads its screenshots from the X server.)
    NoCompositing,
    /// No DMA-BUF renderer (`WEBKIT_DISABLE_DMABUF_RENDERER=1`), which on X11 also leaves the
    /// page uncomposited; beside compositing off it still saves 3–8 MiB in the app's process,
    /// which then sets up no DMA-BUF buffers to receive the page's frames.
    NoDmabuf,
    /// JavaScriptCore's interpreter and baseline JIT only, without its optimising tiers (DFG
    /// and FTL), which the UI's short bursts of script do not need.
    NoOptimizingJit,
    /// JavaScriptCore's interpreter only (`JSC_useJIT=0`): no JIT and no executable memory
    /// in any WebKit process, 6–9 MiB less with 100,000 jobs, and no slower first paint. The
    /// UI's scripts run in short bursts (a page of rows, a form); none runs long enough for a
    /// compiler to pay for its memory.
    NoJit,
}

impl Setting {
    /// Every setting, in the order the benchmark measures them.
    pub const ALL: [Setting; 4] = [
        Setting::NoCompositing,
        Setting::NoDmabuf,
        Setting::NoOptimizingJit,
        Setting::NoJit,
    ];

    /// The setting's name in `ONEJOB_WEBVIEW`.
    pub fn name(self) -> &'static str {
        match self {
            Setting::NoCompositing => "no-compositing",
            Setting::NoDmabuf => "no-dmabuf",
            Setting::NoOptimizingJit => "no-optimizing-jit",
            Setting::NoJit => "no-jit",
        }
    }

    /// The environment that gives WebKit the setting.
    fn environment(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Setting::NoCompositing => &[("WEBKIT_DISABLE_COMPOSITING_MODE", "1")],
            Setting::NoDmabuf => &[("WEBKIT_DISABLE_DMABUF_RENDERER", "1")],
            Setting::NoOptimizingJit => &[("JSC_useDFGJIT", "0"), ("JSC_useFTLJIT", "0")],
            Setting::NoJit => &[("JSC_useJIT", "0")],
        }
    }
}

/// The settings the window gets when `ONEJOB_WEBVIEW` is unset: 395 MiB resident with
/// 100,000 jobs, from 519 with the optimising tiers off alone (docs/perf/window.md).
/// `ONEJOB_WEBVIEW=no-compositing,no-dmabuf,no-optimizing-jit` gives the scripts their
/// baseline JIT back.
pub const DEFAULT: &[Setting] = &[Setting::NoCompositing, Setting::NoDmabuf, Setting::NoJit];

/// The settings named by `ONEJOB_WEBVIEW`, or [`DEFAULT`]. An unknown name is reported on
/// standard error and skipped.
pub fn chosen() -> Vec<Setting> {
    match std::env::var(ENV) {
        Ok(list) => parse(&list),
        Err(_) => DEFAULT.to_vec(),
    }
}

/// Parses `none` or a comma-separated list of setting names, where `default` stands for
/// [`DEFAULT`].
fn parse(list: &str) -> Vec<Setting> {
    let mut settings: Vec<Setting> = Vec::new();
    let wanted = list
        .split(',')
        .map(str::trim)
        .filter(|name| !name.is_empty() && *name != "none")
        .flat_map(|name| {
            if name == "default" {
                DEFAULT.to_vec()
            } else {
                named(name).into_iter().collect()
            }
        });
    for setting in wanted {
        if !settings.contains(&setting) {
            settings.push(setting);
        }
    }
    settings
}

/// The setting called `name`, or none (reported on standard error).
fn named(name: &str) -> Option<Setting> {
    let found = Setting::ALL.into_iter().find(|s| s.name() == name);
    if found.is_none() {
        eprintln!("onejob: {ENV} names no setting {name:?}; it is skipped");
    }
    found
}

/// Sets the environment of `settings` for WebKit in this process and the processes it starts
/// (a variable already set is left as it is). Must run before any other thread starts and
/// before the window is created: [`crate::run`] calls it first.
pub fn prepare(settings: &[Setting]) {
    for (name, value) in settings.iter().flat_map(|s| s.environment()) {
        if std::env::var_os(name).is_none() {
            std::env::set_var(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_list_names_settings_and_none_names_none() {
        assert_eq!(parse("none"), Vec::<Setting>::new());
        assert_eq!(parse(""), Vec::<Setting>::new());
        assert_eq!(
            parse("no-jit, no-compositing,unknown"),
            vec![Setting::NoJit, Setting::NoCompositing]
        );
        for setting in Setting::ALL {
            assert_eq!(parse(setting.name()), vec![setting]);
        }
    }

    #[test]
    fn default_names_the_apps_own_settings_once_each() {
        assert_eq!(parse("default"), DEFAULT.to_vec());
        assert_eq!(parse("no-jit,default"), {
            let mut expected = vec![Setting::NoJit];
            expected.extend(DEFAULT.iter().filter(|s| **s != Setting::NoJit));
            expected
        });
    }
}
