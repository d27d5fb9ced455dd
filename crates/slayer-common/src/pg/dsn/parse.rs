//! The two text forms of a PostgreSQL source, as libpq reads them: a `postgres://` URL
//! (percent-encoded) and a `key=value` connection string (single-quoted, backslash escapes).
//! Both give the same map of parameters; unknown parameters are refused.

use std::collections::BTreeMap;

use super::DsnError;

/// The parameters a source may set.
const KEYS: &[&str] = &[
    "host",
    "port",
    "user",
    "password",
    "dbname",
    "sslmode",
    "sslrootcert",
    "connect_timeout",
    "application_name",
    "passfile",
];

fn decode(text: &str, what: &str) -> Result<String, DsnError> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = text
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| DsnError(format!("invalid percent-encoding in the URL's {what}")))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| {
        DsnError(format!(
            "the URL's {what} is not UTF-8 after percent-decoding"
        ))
    })
}

/// Percent-encodes everything but RFC 3986's unreserved characters.
pub(super) fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn check_key(key: &str) -> Result<(), DsnError> {
    if KEYS.contains(&key) {
        Ok(())
    } else {
        Err(DsnError(format!(
            "unknown connection parameter '{key}': use {}",
            KEYS.join(", ")
        )))
    }
}

/// `postgres[ql]://[user[:password]@][host][:port][,…][/dbname][?key=value&…]`.
pub(super) fn parse_url(url: &str) -> Result<BTreeMap<String, String>, DsnError> {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    if let Some(at) = rest.rfind('@') {
        if rest[..at].contains(['/', '?']) {
            return Err(DsnError(
                "the URL has a / or ? before its @: percent-encode them in the user name and \
                 password (/ is %2F, ? is %3F, @ is %40, : is %3A)"
                    .into(),
            ));
        }
    }
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let mut params = BTreeMap::new();
    let (userinfo, hostlist) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if let Some(userinfo) = userinfo {
        let (user, password) = match userinfo.split_once(':') {
            Some((u, p)) => (u, Some(p)),
            None => (userinfo, None),
        };
        if !user.is_empty() {
            params.insert("user".into(), decode(user, "user")?);
        }
        if let Some(p) = password {
            params.insert("password".into(), decode(p, "password")?);
        }
    }
    if !hostlist.is_empty() {
        let mut hosts = Vec::new();
        let mut ports = Vec::new();
        for item in hostlist.split(',') {
            let (host, port) = if let Some(v6) = item.strip_prefix('[') {
                let (h, after) = v6.split_once(']').ok_or_else(|| {
                    DsnError("unclosed '[' around an IPv6 address in the URL".into())
                })?;
                (h.to_owned(), after.strip_prefix(':').unwrap_or(""))
            } else {
                match item.rsplit_once(':') {
                    Some((h, p)) => (decode(h, "host")?, p),
                    None => (decode(item, "host")?, ""),
                }
            };
            hosts.push(host);
            ports.push(port.to_owned());
        }
        if hosts.iter().any(|h| !h.is_empty()) {
            params.insert("host".into(), hosts.join(","));
        }
        if ports.iter().any(|p| !p.is_empty()) {
            params.insert("port".into(), ports.join(","));
        }
    }
    if !path.is_empty() {
        params.insert("dbname".into(), decode(path, "database name")?);
    }
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair
            .split_once('=')
            .ok_or_else(|| DsnError("a URL parameter has no value: write key=value".into()))?;
        let key = decode(key, "parameters")?;
        check_key(&key)?;
        params.insert(key, decode(value, "parameters")?);
    }
    Ok(params)
}

/// `key=value key2='quoted value'` with libpq's quoting (`\'` and `\\` inside quotes).
pub(super) fn parse_keywords(text: &str) -> Result<BTreeMap<String, String>, DsnError> {
    let mut params = BTreeMap::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.peek().is_none() {
            break;
        }
        let mut key = String::new();
        while let Some(&c) = chars.peek() {
            if c == '=' || c.is_whitespace() {
                break;
            }
            key.push(c);
            chars.next();
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        if chars.next() != Some('=') {
            return Err(DsnError(format!(
                "connection string: '{key}' is not followed by '=' (write key=value)"
            )));
        }
        while chars.peek().is_some_and(|c| c.is_whitespace()) {
            chars.next();
        }
        let mut value = String::new();
        if chars.peek() == Some(&'\'') {
            chars.next();
            let mut closed = false;
            while let Some(c) = chars.next() {
                match c {
                    '\\' => value.extend(chars.next()),
                    '\'' => {
                        closed = true;
                        break;
                    }
                    c => value.push(c),
                }
            }
            if !closed {
                return Err(DsnError(format!(
                    "connection string: the quoted value of '{key}' is not closed"
                )));
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                if c == '\\' {
                    chars.next();
                    value.extend(chars.next());
                } else {
                    value.push(c);
                    chars.next();
                }
            }
        }
        check_key(&key)?;
        params.insert(key, value);
    }
    Ok(params)
}
