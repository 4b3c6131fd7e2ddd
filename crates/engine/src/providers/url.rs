//! Provider URLs: what a `base_url` or `status_url` may not carry, and the form in which
//! any URL appears in a message (SPEC §12).
//!
//! A URL is stored in the ledger and shown in the app and in `provider list`, so a secret in
//! it would be kept and printed; the key belongs in the environment variable `api_key_env`
//! names. A query string without a secret-like parameter name is allowed: an `http`
//! provider's `base_url` is used exactly as given. Messages show a URL without its user
//! info, query string and fragment, whatever it holds.

use reqwest::Url;

/// Words that make a query parameter's name suggest a secret. A name matches when, lowercased
/// and without `-`, `_`, `.` and spaces, it contains one of them (`access_token`,
/// `x-api-key`, `X-Amz-Signature`, `sessionid`). The net is wide on purpose: a name such as
/// `author` is refused too, since a refused URL costs a person one edit and a stored secret
/// cannot be taken back.
const SECRET_WORDS: [&str; 14] = [
    "key",
    "apikey",
    "token",
    "secret",
    "password",
    "passwd",
    "pwd",
    "sig",
    "signature",
    "auth",
    "authorization",
    "credential",
    "session",
    "cookie",
];

/// The longest parameter name a message repeats; a longer one is cut, with `…`.
const MAX_SHOWN_NAME: usize = 40;

/// A URL as a message may show it: `scheme://host[:port]/path`, without user info, query
/// string or fragment. Text that is not a URL is cut the same way: everything before an `@`
/// in what would be its authority, and everything from the first `?` or `#`, is dropped.
pub(crate) fn redact_url(url: &str) -> String {
    if let Ok(mut parsed) = Url::parse(url) {
        if matches!(parsed.scheme(), "http" | "https") && parsed.has_host() {
            // Cannot fail for an http(s) URL with a host.
            let _ = parsed.set_username("");
            let _ = parsed.set_password(None);
            parsed.set_query(None);
            parsed.set_fragment(None);
            return parsed.into();
        }
    }
    let (scheme, rest) = match url.find("://") {
        Some(at) => url.split_at(at + 3),
        None => ("", url),
    };
    let end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let host = authority.rsplit('@').next().unwrap_or_default();
    format!("{scheme}{}{}", before_query(host), before_query(path))
}

fn before_query(text: &str) -> &str {
    text.split(['?', '#']).next().unwrap_or_default()
}

/// Checks that `url` is an absolute http:// or https:// URL that carries no secret: no user
/// info and no query (or fragment) parameter whose name suggests one. `Err` is the reason,
/// for a message that names the field; it never repeats the URL's user info or query string.
/// `as_given` is what the person wrote (a template, say), shown redacted when `url` is not
/// a URL.
pub(crate) fn check(url: &str, as_given: &str) -> Result<(), String> {
    let parsed = Url::parse(url)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.has_host());
    let Some(parsed) = parsed.filter(|_| {
        (url.starts_with("http://") || url.starts_with("https://"))
            && !url.chars().any(char::is_whitespace)
    }) else {
        return Err(format!(
            "{:?} is not an http:// or https:// URL",
            redact_url(as_given)
        ));
    };
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(
            "carries user info (user:password@): URLs are stored and shown, so a credential \
             never goes in one; name the environment variable that holds the key in api_key_env"
                .to_owned(),
        );
    }
    for (part, text) in [
        ("query parameter", parsed.query()),
        ("fragment parameter", parsed.fragment()),
    ] {
        if let Some(name) = text.and_then(secret_param) {
            return Err(format!(
                "has a {part} named {name:?}, which suggests a secret: URLs are stored and \
                 shown, so a key never goes in one; name the environment variable that holds \
                 it in api_key_env"
            ));
        }
    }
    Ok(())
}

/// The first parameter of a query string (`a=1&b=2`, `;` also separates) whose decoded name
/// suggests a secret, cut for display.
fn secret_param(query: &str) -> Option<String> {
    query
        .split(['&', ';'])
        .map(|pair| decode(pair.split('=').next().unwrap_or_default()))
        .find(|name| suggests_secret(name))
        .map(|name| {
            if name.chars().count() > MAX_SHOWN_NAME {
                format!("{}…", name.chars().take(MAX_SHOWN_NAME).collect::<String>())
            } else {
                name
            }
        })
}

/// Whether a field or parameter name suggests it holds a secret (see [`SECRET_WORDS`]).
pub(crate) fn suggests_secret(name: &str) -> bool {
    let squashed: String = name
        .chars()
        .filter(|c| !matches!(c, '-' | '_' | '.' | ' '))
        .flat_map(char::to_lowercase)
        .collect();
    SECRET_WORDS.iter().any(|word| squashed.contains(word))
}

/// `application/x-www-form-urlencoded` decoding of one name: `+` is a space, `%XX` a byte.
fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok())
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                if let Some(byte) = hex {
                    out.push(byte);
                    i += 2;
                } else {
                    out.push(b'%');
                }
            }
            byte => out.push(byte),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_keeps_scheme_host_port_and_path_only() {
        for (url, shown) in [
            ("http://u:pw@h:8080/a/b?key=s#f", "http://h:8080/a/b"),
            ("https://h/x?mode=fast", "https://h/x"),
            ("http://user:p?ss@host/x", "http://host/x"),
            ("{base_url}/status?token=s", "{base_url}/status"),
            ("ftp://u:pw@h/x?k=s", "ftp://h/x"),
            ("u:pw@h/x?k=s", "h/x"),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
    }

    #[test]
    fn secret_names_are_found_however_they_are_spelled() {
        for query in [
            "api_key=s",
            "mode=fast&Access_Token=s",
            "x-api-key=s",
            "X-Amz-Signature=s",
            "a=1;sessionid=s",
            "api%5Fkey=s",
            "pass+word=s",
            "AUTH",
        ] {
            assert!(secret_param(query).is_some(), "{query}");
        }
        for query in ["mode=fast", "model=m&n=2", "", "q=token"] {
            assert_eq!(secret_param(query), None, "{query}");
        }
    }

    #[test]
    fn checks_refuse_user_info_and_secret_parameters_without_repeating_them() {
        for url in [
            "http://user:sk-planted@127.0.0.1:9/x",
            "http://sk-planted@127.0.0.1:9/x",
            "http://127.0.0.1:9/x?api_key=sk-planted",
            "http://127.0.0.1:9/x#access_token=sk-planted",
            "http://user:sk-planted?x@127.0.0.1:9/x",
            "ftp://user:sk-planted@h/x?k=sk-planted",
        ] {
            let why = check(url, url).expect_err(url);
            assert!(!why.contains("sk-planted"), "{url}: {why}");
        }
        for url in [
            "http://127.0.0.1:9/x?mode=fast",
            "https://api.example.com/v1",
        ] {
            assert_eq!(check(url, url), Ok(()));
        }
    }
}
