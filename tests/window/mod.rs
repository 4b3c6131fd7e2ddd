//! The end-to-end harness: a running app in its own Xvfb, tauri-driver and fresh data
//! directory, driven through classic WebDriver, shared by every end-to-end test file.
//!
//! Needs `tauri-driver` (cargo install tauri-driver --locked), `WebKitWebDriver` (Debian
//! webkit2gtk-driver) and `Xvfb`; `scripts/setup` installs them.

// Each test file uses its own part of the harness.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use fantoccini::{Client, ClientBuilder, Locator};
use onejob_engine::Engine;
use serde_json::{json, Value};

/// One window at a time: two cores do not run two WebKit processes and a build well.
pub static SERIAL: Mutex<()> = Mutex::new(());

pub const APP: &str = env!("CARGO_BIN_EXE_onejob-app");

/// A running app in its own X server, data directory and driver.
pub struct Window {
    pub client: Client,
    /// The engine on the app's database, for seeding and checking from the test.
    pub engine: Engine,
    driver: Child,
    xvfb: Child,
    /// The X display the window is on, e.g. `:99`.
    pub display: String,
    dir: tempfile::TempDir,
}

/// What the app is started with besides a fresh data directory.
#[derive(Default)]
pub struct Options {
    /// Extra environment for the driver and so the app (e.g. a private D-Bus session).
    pub env: Vec<(String, String)>,
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

pub fn artifacts() -> PathBuf {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("artifacts");
    std::fs::create_dir_all(&dir).expect("artifacts/ can be created");
    dir
}

impl Window {
    /// Prepares the database with `seed`, then opens the app on it.
    pub async fn open<F, Fut>(seed: F) -> Window
    where
        F: FnOnce(Engine) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        Window::open_with(Options::default(), seed).await
    }

    /// Prepares the database with `seed`, then opens the app on it with `options`. The
    /// driver's and the app's output go to files in the data directory ([`Window::outputs`]).
    pub async fn open_with<F, Fut>(options: Options, seed: F) -> Window
    where
        F: FnOnce(Engine) -> Fut,
        Fut: std::future::Future<Output = ()>,
    {
        // The driver and the app inherit it: their keyring is the one `options.env` names, or none.
        onejob_testkit::isolate_keyring();
        let dir = tempfile::tempdir().unwrap();
        let (data, config, cache) = (
            dir.path().join("data"),
            dir.path().join("config"),
            dir.path().join("cache"),
        );
        let db = data.join("dev.onejob.app/onejob.db");
        let engine = Engine::open(&db).await.unwrap();
        seed(engine.clone()).await;

        // Xvfb picks a free display and writes its number on the descriptor given.
        let mut xvfb = Command::new("Xvfb")
            .args([
                "-displayfd",
                "1",
                "-screen",
                "0",
                "1280x800x24",
                "-nolisten",
                "tcp",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("Xvfb runs (apt-get install xvfb)");
        let mut line = String::new();
        BufReader::new(xvfb.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let display = format!(":{}", line.trim());

        let (port, native) = (free_port(), free_port());
        // The options' environment first, so it cannot move the app's data directories.
        let mut driver = Command::new("tauri-driver")
            .envs(options.env)
            .args([
                "--port",
                &port.to_string(),
                "--native-port",
                &native.to_string(),
            ])
            .env("DISPLAY", &display)
            .env("XDG_DATA_HOME", &data)
            .env("XDG_CONFIG_HOME", &config)
            .env("XDG_CACHE_HOME", &cache)
            .env("GDK_BACKEND", "x11")
            .stdout(std::fs::File::create(dir.path().join("driver.out")).unwrap())
            .stderr(std::fs::File::create(dir.path().join("driver.err")).unwrap())
            .spawn()
            .expect("tauri-driver runs (cargo install tauri-driver --locked)");

        let mut caps = serde_json::Map::new();
        caps.insert("browserName".into(), json!("wry"));
        caps.insert("tauri:options".into(), json!({ "application": APP }));
        let deadline = Instant::now() + Duration::from_secs(30);
        let client = loop {
            // An app that exits before its window opens leaves the session waiting for ever.
            let (mut builder, url) = (ClientBuilder::native(), format!("http://127.0.0.1:{port}"));
            let connect = builder.capabilities(caps.clone()).connect(&url);
            match tokio::time::timeout(Duration::from_secs(60), connect).await {
                Ok(Ok(client)) => break client,
                Ok(Err(e)) if Instant::now() < deadline => {
                    let _ = e;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                Ok(Err(e)) => {
                    stop(&mut driver, &mut xvfb);
                    panic!("no WebDriver session: {e}")
                }
                Err(_) => {
                    stop(&mut driver, &mut xvfb);
                    let said = std::fs::read(dir.path().join("driver.err")).unwrap_or_default();
                    let said = String::from_utf8_lossy(&said);
                    let app: Vec<&str> = said.lines().filter(|l| l.contains("onejob")).collect();
                    panic!(
                        "no WebDriver session within 60 s: the app's window never opened ({})",
                        app.join("; ")
                    )
                }
            }
        };
        let window = Window {
            client,
            engine,
            driver,
            xvfb,
            display,
            dir,
        };
        window.wait_for("[data-screen=jobs]").await;
        window
    }

    /// Waits up to 20 s for an element to be there, and returns it. If it never comes, the
    /// failure says what the window showed instead (its text, a screenshot in artifacts/) and
    /// what the app printed last.
    pub async fn wait_for(&self, css: &str) -> fantoccini::elements::Element {
        self.wait_for_within(css, Duration::from_secs(20)).await
    }

    /// [`Window::wait_for`] for up to `limit`: for what a busy machine may take long to show.
    pub async fn wait_for_within(
        &self,
        css: &str,
        limit: Duration,
    ) -> fantoccini::elements::Element {
        match self
            .client
            .wait()
            .at_most(limit)
            .for_element(Locator::Css(css))
            .await
        {
            Ok(element) => element,
            Err(e) => panic!("{css} did not appear: {e}\n{}", self.what_it_shows().await),
        }
    }

    /// What the window shows now and what the app printed last, for a failure's message;
    /// each part it cannot get within 10 s (a window that stopped answering) is said so.
    pub async fn what_it_shows(&self) -> String {
        let ten = Duration::from_secs(10);
        let text = async {
            let body = self.client.find(Locator::Css("body")).await?;
            body.text().await
        };
        let shown = match tokio::time::timeout(ten, text).await {
            Ok(Ok(text)) => text,
            Ok(Err(e)) => format!("(no text: {e})"),
            Err(_) => "(no text within 10 s)".into(),
        };
        // The X server's pixels, as `screenshot` takes them (WebDriver's own can wait for ever).
        let shot = artifacts().join(format!("failed-{}.png", std::process::id()));
        let saved = match tokio::time::timeout(ten, self.grab(&shot)).await {
            Ok(Ok(())) => format!("screenshot: {}", shot.display()),
            Ok(Err(e)) => format!("(no screenshot: {e})"),
            Err(_) => "(no screenshot within 10 s)".into(),
        };
        let outputs = String::from_utf8_lossy(&self.outputs()).into_owned();
        let mut last: Vec<&str> = outputs.lines().rev().take(40).collect();
        last.reverse();
        format!(
            "the window shows:\n{shown}\n{saved}\nthe app and driver printed last:\n{}",
            last.join("\n")
        )
    }

    pub async fn click(&self, css: &str) {
        self.wait_for(css).await.click().await.unwrap();
    }

    pub async fn text(&self, css: &str) -> String {
        self.wait_for(css).await.text().await.unwrap()
    }

    /// Waits up to 20 s until `check` holds for the page's text of `css`.
    pub async fn wait_text(&self, css: &str, check: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        let mut seen = String::new();
        loop {
            if let Ok(el) = self.client.find(Locator::Css(css)).await {
                if let Ok(text) = el.text().await {
                    if check(&text) {
                        return text;
                    }
                    seen = text;
                }
            }
            assert!(
                Instant::now() < deadline,
                "{css} never showed what was expected; it last showed {seen:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Types `text` into the input or text area `css`, replacing what it held, and checks that it
    /// now holds exactly that. A form that fills in its defaults as it appears can re-render a
    /// field between the clear and the typing, leaving the old text in front of the new: then the
    /// field is cleared and typed again.
    pub async fn fill(&self, css: &str, text: &str) {
        let field = self.wait_for(css).await;
        let mut held = None;
        for _ in 0..5 {
            field.clear().await.unwrap();
            field.send_keys(text).await.unwrap();
            held = field.prop("value").await.unwrap();
            if held.as_deref() == Some(text) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        panic!("{css} holds {held:?} after typing {text:?}");
    }

    /// Picks the option of the select `css` whose value is `value`, once the screen has loaded it
    /// (a select appears before the list it offers has arrived from the backend).
    pub async fn pick(&self, css: &str, value: &str) {
        self.wait_for(&format!("{css} option[value=\"{value}\"]"))
            .await;
        self.wait_for(css)
            .await
            .select_by_value(value)
            .await
            .unwrap_or_else(|e| panic!("{css} has no option {value}: {e}"));
    }

    /// Waits up to 20 s for `css` to show any text, and returns the text.
    pub async fn text_once_shown(&self, css: &str) -> String {
        self.wait_text(css, |t| !t.is_empty()).await
    }

    /// Whether an element matching `css` is in the window now, without waiting for one.
    pub async fn shows(&self, css: &str) -> bool {
        self.client.find(Locator::Css(css)).await.is_ok()
    }

    pub async fn attr(&self, css: &str, name: &str) -> Option<String> {
        self.wait_for(css).await.attr(name).await.unwrap()
    }

    /// Saves what the window shows in `artifacts/{name}.png`: once the page has painted its
    /// last change (two animation frames), the window's pixels as the X server holds them,
    /// which is what a person sees.
    ///
    /// Not WebDriver's Take Screenshot: on WebKitGTK it waits for the web process to confirm
    /// a newly drawn frame, which an uncomposited page (the app's default, `webview.rs`)
    /// draws only when something on it changes; on a page at rest it never returns.
    pub async fn screenshot(&self, name: &str) {
        self.client
            .execute_async(
                "const done = arguments[0]; \
                 requestAnimationFrame(() => requestAnimationFrame(() => done()));",
                vec![],
            )
            .await
            .unwrap();
        let path = artifacts().join(format!("{name}.png"));
        self.grab(&path).await.unwrap();
    }

    /// Saves the window's pixels as the X server holds them in `path`.
    async fn grab(&self, path: &Path) -> Result<(), String> {
        let (x, y, width, height) = self
            .client
            .get_window_rect()
            .await
            .map_err(|e| format!("no window rectangle: {e}"))?;
        let status = tokio::process::Command::new("import")
            .args(["-display", &self.display, "-window", "root", "-crop"])
            .arg(format!("{width}x{height}+{x}+{y}"))
            .arg("+repage")
            .arg(path)
            .status()
            .await
            .map_err(|e| format!("import does not run (apt-get install imagemagick): {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("import could not save {}", path.display()))
        }
    }

    /// Opens the job from the Jobs list with one click on its row, and waits for its screen.
    pub async fn open_job(&self, id: &str) {
        self.click("[data-screen=jobs]").await;
        let row = format!(".job-row[data-job-id='{id}']");
        self.click(&row).await;
        self.wait_for(&format!("section.job[data-job-id='{id}'] #job-title"))
            .await;
    }

    /// The folder holding the app's data, config and cache directories and the outputs.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The app's database file.
    pub fn db(&self) -> PathBuf {
        self.dir.path().join("data/dev.onejob.app/onejob.db")
    }

    /// Everything the driver and the app printed so far, stdout and stderr.
    pub fn outputs(&self) -> Vec<u8> {
        let mut all = std::fs::read(self.dir.path().join("driver.out")).unwrap_or_default();
        all.extend(std::fs::read(self.dir.path().join("driver.err")).unwrap_or_default());
        all
    }

    pub async fn close(self) {
        let _ = self.client.clone().close().await;
        self.engine.close().await;
    }
}

impl Drop for Window {
    /// Stops the driver and what it started (a killed tauri-driver leaves WebKitWebDriver and
    /// the app running) and the X server, also when a test fails before `close`.
    fn drop(&mut self) {
        stop(&mut self.driver, &mut self.xvfb);
    }
}

/// Stops the driver, what it started (a killed tauri-driver leaves WebKitWebDriver and the app
/// running) and the X server.
fn stop(driver: &mut Child, xvfb: &mut Child) {
    let started = descendants(driver.id());
    for child in [driver, xvfb] {
        let _ = child.kill();
        let _ = child.wait();
    }
    for pid in started {
        let _ = Command::new("kill")
            .arg(pid.to_string())
            .stderr(Stdio::null())
            .status();
    }
}

/// Every process `pid` started, and theirs, from the children lists of all its threads.
pub fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
        .into_iter()
        .flatten();
    for task in tasks.flatten() {
        let children = std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
        for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
            found.push(child);
            found.extend(descendants(child));
        }
    }
    found
}

/// The sandbox with these dials and a soft timeout short enough for a test.
pub async fn sandbox(engine: &Engine, soft_ms: u64, dials: Value) {
    let config = json!({"name": "sandbox", "kind": "sandbox", "soft_timeout_ms": soft_ms,
        "hard_timeout_ms": 60_000, "honours_idempotency_key": true, "dials": dials});
    engine.add_provider(&config.to_string()).await.unwrap();
}

pub fn run<F: std::future::Future<Output = ()>>(test: F) {
    let _serial = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(test);
}

/// Writes `n` finished jobs of the app's owner straight into the ledger file.
pub async fn seed_jobs(db: &Path, n: u32) {
    onejob_testkit::seed_jobs(db, "local", n).await.unwrap();
}

/// The SHA-256 of a file's bytes, in hex.
pub fn checksum(path: &Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(path).unwrap()))
}
