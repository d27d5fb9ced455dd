//! Secrets never reach output. A URL is shown with its user name, password and query values
//! masked (`https://***:***@host/v1?key=***`), and any message that may quote one (an HTTP
//! client's error chain, a server's echo) is scrubbed of them before it is printed.

use url::Url;

/// What stands in for a secret.
pub const MASK: &str = "***";

/// `raw` as it may be shown: a URL with its user name, password and query values masked;
/// text that does not parse as a URL with the part before an `@` masked when it looks like one.
pub fn masked_url(raw: &str) -> String {
    match Url::parse(raw) {
        Ok(url) => masked(&url),
        Err(_) => match (raw.find("://"), raw.rfind('@')) {
            (Some(scheme_end), Some(at)) if at > scheme_end => {
                format!("{}{MASK}{}", &raw[..scheme_end + 3], &raw[at..])
            }
            _ => raw.to_owned(),
        },
    }
}

/// A parsed URL as it may be shown.
pub fn masked(url: &Url) -> String {
    let mut shown = url.clone();
    if !url.username().is_empty() {
        let _ = shown.set_username(MASK);
    }
    if url.password().is_some() {
        let _ = shown.set_password(Some(MASK));
    }
    if url.query().is_some() {
        let pairs: Vec<String> = url
            .query_pairs()
            .map(|(key, value)| match value.is_empty() {
                true => key.into_owned(),
                false => format!("{key}={MASK}"),
            })
            .collect();
        shown.set_query(Some(&pairs.join("&")));
    }
    // The masks themselves are not secrets: show them unescaped.
    shown.to_string().replace("%2A%2A%2A", MASK)
}

/// The parts of a URL that must not be shown, each as written and as decoded (longest first,
/// so a scrub replaces a whole value before any part of it). Values shorter than four
/// characters are left out: no secret is that short, and replacing every `1` in a message
/// would garble it.
pub fn secrets_of(url: &Url) -> Vec<String> {
    let mut raw: Vec<String> = vec![url.username().to_owned()];
    raw.extend(url.password().map(str::to_owned));
    for piece in url.query().unwrap_or_default().split('&') {
        if let Some((_, value)) = piece.split_once('=') {
            raw.push(value.to_owned());
            // The decoded form too: servers and error chains may quote either.
            let pair = format!("x={value}");
            let decoded = url::form_urlencoded::parse(pair.as_bytes()).next();
            raw.extend(decoded.map(|(_, v)| v.into_owned()));
        }
    }
    let mut secrets: Vec<String> = Vec::new();
    for text in raw {
        if text.chars().count() >= 4 && !secrets.contains(&text) {
            secrets.push(text);
        }
    }
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    secrets
}

/// `message` with every one of `secrets` replaced by [`MASK`].
pub fn scrub(message: &str, secrets: &[String]) -> String {
    secrets.iter().fold(message.to_owned(), |text, secret| {
        text.replace(secret.as_str(), MASK)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_password_and_query_values_are_masked() {
        assert_eq!(
            masked_url("https://me:s3cret@llm.example/v1?api-version=2024-06-01&key=abc%2Fdef"),
            "https://***:***@llm.example/v1?api-version=***&key=***"
        );
        assert_eq!(
            masked_url("postgresql://ann:PW@db.example:5432/slayer"),
            "postgresql://***:***@db.example:5432/slayer"
        );
        assert_eq!(
            masked_url("http://localhost:8080/v1"),
            "http://localhost:8080/v1"
        );
        assert_eq!(masked_url("postgres://u:p@[bad"), "postgres://***@[bad");
        assert_eq!(masked_url("./slayer.db"), "./slayer.db");
    }

    #[test]
    fn a_scrub_takes_every_form_of_each_secret() {
        let url = Url::parse("https://token@h.example/v1?key=abc%2Fdef&x=1").unwrap();
        let secrets = secrets_of(&url);
        let message = "error sending request for url (https://token@h.example/v1/embeddings?key=abc%2Fdef&x=1): key abc/def refused (HTTP 401)";
        assert_eq!(
            scrub(message, &secrets),
            "error sending request for url (https://***@h.example/v1/embeddings?key=***&x=1): key *** refused (HTTP 401)"
        );
    }
}
