//! The top-level help names the database the command line shares with the desktop app, so
//! whoever installed both knows where their jobs are.

use crate::common;

use common::Ledger;

#[test]
fn help_names_the_apps_database_resolved_and_as_a_rule() {
    let ledger = Ledger::empty();
    let data = ledger.home().join("data");
    let run = common::finish(
        ledger
            .command(&["--help"])
            .env_remove("ONEJOB_DB")
            .output()
            .expect("run onejob --help"),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let resolved = data.join("dev.onejob.app").join("onejob.db");
    let resolved = resolved.to_str().expect("a UTF-8 temp path");
    let about = run
        .stdout
        .split("Usage:")
        .next()
        .expect("text before the usage");
    assert!(
        about.contains(&format!("here {resolved}.")),
        "the resolved path is not in the description: {}",
        run.stdout
    );
    assert!(
        about.contains("$XDG_DATA_HOME/dev.onejob.app/onejob.db"),
        "the rule is not in the description: {}",
        run.stdout
    );
    assert!(
        about.contains("~/.local/share/dev.onejob.app/onejob.db"),
        "the fallback is not in the description: {}",
        run.stdout
    );
}

#[test]
fn help_names_the_home_fallback_when_xdg_data_home_is_unset() {
    let ledger = Ledger::empty();
    let run = common::finish(
        ledger
            .command(&["--help"])
            .env_remove("ONEJOB_DB")
            .env_remove("XDG_DATA_HOME")
            .output()
            .expect("run onejob --help"),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let resolved = ledger.home().join(".local/share/dev.onejob.app/onejob.db");
    let resolved = resolved.to_str().expect("a UTF-8 temp path");
    assert!(
        run.stdout.contains(&format!("here {resolved}.")),
        "{}",
        run.stdout
    );
}

#[test]
fn help_never_shows_a_ledger_url_from_the_environment() {
    let ledger = Ledger::empty();
    for args in [&["--help"][..], &["jobs", "--help"][..]] {
        let run = common::finish(
            ledger
                .command(args)
                .env(
                    "ONEJOB_DB",
                    "postgres://team:hunter2-secret@127.0.0.1/ledger",
                )
                .output()
                .expect("run onejob --help"),
        );
        assert_eq!(run.code, 0, "{run:?}");
        assert!(run.stdout.contains("postgres://"), "{}", run.stdout);
        assert!(!run.stdout.contains("hunter2"), "{}", run.stdout);
        assert!(!run.stdout.contains("team:"), "{}", run.stdout);
    }
}
