//! A PostgreSQL ledger's URL: telling one from a file's path, and its password (or
//! `PGPASSWORD`) kept out of every location and error shown.

/// Whether `location` names a PostgreSQL ledger (`postgres://` or `postgresql://`).
pub fn is_url(location: &str) -> bool {
    let lower = location.get(..13).unwrap_or(location).to_ascii_lowercase();
    lower.starts_with("postgres://") || lower.starts_with("postgresql://")
}

/// The URL with its password replaced by `***`, in the user part and in a `password=` query
/// parameter alike.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let authority = match authority.rsplit_once('@') {
        Some((user, host)) => match user.split_once(':') {
            Some((name, _)) => format!("{name}:***@{host}"),
            None => format!("{user}@{host}"),
        },
        None => authority.to_owned(),
    };
    let tail = match tail.split_once('?') {
        Some((path, query)) => {
            let query = query
                .split('&')
                .map(|pair| match pair.split_once('=') {
                    Some((k, _)) if k.eq_ignore_ascii_case("password") => format!("{k}=***"),
                    _ => pair.to_owned(),
                })
                .collect::<Vec<_>>()
                .join("&");
            format!("{path}?{query}")
        }
        None => tail.to_owned(),
    };
    format!("{scheme}://{authority}{tail}")
}

/// The password the connection will use: the URL's, or `PGPASSWORD`.
pub(super) fn options_password(url: &str) -> Option<String> {
    let from_url = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split(['/', '?']).next())
        .and_then(|authority| authority.rsplit_once('@'))
        .and_then(|(user, _)| user.split_once(':'))
        .map(|(_, password)| password.to_owned());
    from_url
        .filter(|p| !p.is_empty())
        .or_else(|| std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()))
}

/// `text` with every occurrence of the password in `url` (or `PGPASSWORD`) replaced.
pub(super) fn scrub(text: &str, url: &str) -> String {
    match options_password(url) {
        Some(secret) => text.replace(&secret, "***"),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_never_survives_redaction() {
        assert_eq!(
            redact("postgres://alice:s3cret@db.example:5432/ledger"),
            "postgres://alice:***@db.example:5432/ledger"
        );
        assert_eq!(
            redact("postgresql://alice@127.0.0.1/ledger?password=s3cret&sslmode=disable"),
            "postgresql://alice@127.0.0.1/ledger?password=***&sslmode=disable"
        );
        assert_eq!(
            redact("postgres://127.0.0.1:5432/ledger"),
            "postgres://127.0.0.1:5432/ledger"
        );
        // An @ inside the password: the host is after the last one.
        assert_eq!(
            redact("postgres://bob:p@ss@h/db"),
            "postgres://bob:***@h/db"
        );
    }

    #[test]
    fn only_postgres_schemes_are_urls() {
        assert!(is_url("postgres://h/db"));
        assert!(is_url("PostgreSQL://h/db"));
        assert!(!is_url("/tmp/onejob.db"));
        assert!(!is_url("mysql://h/db"));
    }
}
