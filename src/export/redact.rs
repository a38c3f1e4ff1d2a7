//! Connection strings shown without their secrets. [`redact`] masks every form a password takes
//! in a libpq connection string: the URL's `user:password@` (read to the last `@` before the
//! host, so that a raw `@`, `/` or `?` in a password is still covered), and the value of every
//! `password` and `sslpassword` parameter, whatever the case of the key and however it is
//! percent-encoded (URL query) or quoted (`key=value`). [`scrub`] removes known secrets from
//! text that comes from elsewhere (the driver, the operating system).

use super::conninfo::{decode_lossy, kv_tokens, url_rest};

/// Whether a parameter name is a secret's: `password` or `sslpassword`, in any case.
fn is_secret_key(key: &str) -> bool {
    let k = key.trim().to_ascii_lowercase();
    k == "password" || k == "sslpassword"
}

/// `s` with every password masked as `***`: the URL's `user:password@`, and the value of every
/// `password`/`sslpassword` parameter (URL query, any case, percent-encoded name; or
/// `key=value`, quoted or not). Never fails: a string that does not parse is masked as far as
/// it can be read.
pub fn redact(s: &str) -> String {
    let mut spans: Vec<std::ops::Range<usize>> = Vec::new();
    if let Some(rest) = url_rest(s) {
        let base = s.len() - rest.len();
        // the user information, read widely: to the last '@' before the query, where the
        // query starts at the first '?' after the first '@'
        if let Some(first_at) = rest.find('@') {
            let query = rest[first_at..]
                .find('?')
                .map_or(rest.len(), |q| first_at + q);
            let at = rest[..query].rfind('@').unwrap_or(first_at);
            if let Some(colon) = rest[..at].find(':') {
                spans.push(base + colon + 1..base + at);
            }
        }
        // query parameters: every '?' or '&' may start one (a raw '?' in a password has been
        // covered above)
        let bytes = rest.as_bytes();
        for (i, &c) in bytes.iter().enumerate() {
            if c != b'?' && c != b'&' {
                continue;
            }
            let pair = &rest[i + 1..];
            let end = pair.find('&').unwrap_or(pair.len());
            if let Some(eq) = pair[..end].find('=') {
                if is_secret_key(&decode_lossy(&pair[..eq])) {
                    spans.push(base + i + 1 + eq + 1..base + i + 1 + end);
                }
            }
        }
    } else {
        let (tokens, _) = kv_tokens(s);
        for t in tokens {
            if is_secret_key(&s[t.key.clone()]) {
                match t.value {
                    Some(v) => spans.push(v),
                    None => spans.push(t.key.end..s.len()),
                }
            }
        }
    }
    mask(s, spans)
}

/// `s` with the byte ranges `spans` (on char boundaries) replaced by `***`, overlaps merged.
fn mask(s: &str, mut spans: Vec<std::ops::Range<usize>>) -> String {
    spans.retain(|r| r.start < r.end);
    spans.sort_by_key(|r| r.start);
    let mut out = String::with_capacity(s.len());
    let mut pos = 0;
    for r in spans {
        if r.end <= pos {
            continue;
        }
        let start = r.start.max(pos);
        out.push_str(&s[pos..start]);
        out.push_str("***");
        pos = r.end;
    }
    out.push_str(&s[pos..]);
    out
}

/// `text` with every occurrence of each secret (at least 4 characters long: shorter ones would
/// mask ordinary words) replaced by `***`.
pub fn scrub(text: &str, secrets: &[String]) -> String {
    let mut out = text.to_string();
    for s in secrets.iter().filter(|s| s.chars().count() >= 4) {
        out = out.replace(s.as_str(), "***");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::conninfo::parse;

    #[test]
    fn every_password_form_is_masked() {
        for (s, secret) in [
            ("postgresql://u:secret@h:5/db", "secret"),
            (
                "postgresql://u@127.0.0.1:1/db?password=secretpw",
                "secretpw",
            ),
            (
                "postgresql://u@h/db?sslmode=require&PassWord=secretpw",
                "secretpw",
            ),
            ("postgresql://u@h/db?pass%77ord=secretpw&x=1", "secretpw"),
            ("postgresql://u@h/db?sslpassword=keypass", "keypass"),
            ("postgres://u:p%40ss@h/db", "p%40ss"),
            // raw '@', '/' and '?' in the password: masked to the last '@' before the host
            ("postgresql://u:pa@ss/w?rd@h/db", "pa@ss/w?rd"),
            ("postgresql://u:pa?ss@h/db?password=x2y3", "pa?ss"),
            ("host=/tmp user=u password=secret", "secret"),
            ("host=/tmp user=u PASSWORD = 'two words'", "two words"),
            (
                "host=/tmp password='unterminated secret",
                "unterminated secret",
            ),
            ("user=u sslpassword=keypass host=h", "keypass"),
        ] {
            let r = redact(s);
            assert!(!r.contains(secret), "{s} → {r}");
            assert!(r.contains("***"), "{s} → {r}");
        }
        // nothing else changes
        assert_eq!(
            redact("postgresql://u:secret@h:5/db?sslmode=require"),
            "postgresql://u:***@h:5/db?sslmode=require"
        );
        assert_eq!(
            redact("postgresql://u@h/db?password=secretpw&sslmode=require"),
            "postgresql://u@h/db?password=***&sslmode=require"
        );
        assert_eq!(redact("postgresql://u@h/db"), "postgresql://u@h/db");
        assert_eq!(
            redact("host=/tmp user=u password='a b' dbname=d"),
            "host=/tmp user=u password=*** dbname=d"
        );
        // the parser and the redaction agree on what the password is
        for s in [
            "postgresql://u:secret@h/db",
            "postgresql://u@h/db?password=se%63ret",
            "host=h user=u password='sec ret'",
        ] {
            let c = parse(s).unwrap();
            let pw = c.password.clone().unwrap();
            assert!(!redact(s).contains(&pw[..3]), "{s}");
            assert_eq!(scrub(&format!("echo {pw}"), &c.secrets()), "echo ***");
        }
    }
}
