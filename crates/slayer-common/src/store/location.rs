//! Where a store is: `--store` / `SLAYER_STORE` names an SQLite file or a PostgreSQL server
//! (a `postgres://` URL or a libpq `key=value` string, by the rules the PostgreSQL source
//! follows, plus a `schema` option), and where a server store's per-host caches live.

use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::StoreError;
use crate::pg::dsn::{looks_like_dsn, Environment, PgTarget, ProcessEnv};

/// The schema a server store lives in when the URL names none.
pub const DEFAULT_SCHEMA: &str = "slayer";

/// The `application_name` a store's connections show the server.
const APPLICATION: &str = "slayer";

/// Where a store is.
#[derive(Debug, Clone)]
pub enum Location {
    /// An SQLite file.
    File(PathBuf),
    /// A schema in a PostgreSQL database.
    Server(ServerStore),
}

/// A store on a PostgreSQL server.
#[derive(Debug, Clone)]
pub struct ServerStore {
    /// The server, user and database (its `Debug` masks the password).
    pub target: PgTarget,
    /// The schema holding the store's tables.
    pub schema: String,
}

impl Location {
    /// Reads `--store`: a server's connection string when it looks like one (and is no file's
    /// name), else a file. A URL of another scheme is refused, its secrets masked.
    pub fn parse(store: &Path) -> Result<Location, StoreError> {
        Location::parse_with(store, &ProcessEnv)
    }

    /// [`Location::parse`] with the environment given (tests).
    pub fn parse_with(store: &Path, env: &dyn Environment) -> Result<Location, StoreError> {
        let Some(text) = store.to_str().filter(|t| looks_like_dsn(t)) else {
            return Ok(Location::File(store.to_owned()));
        };
        if let Some((scheme, _)) = text.split_once("://") {
            if scheme != "postgres" && scheme != "postgresql" {
                return Err(StoreError::ServerUrl {
                    shown: masked(text),
                });
            }
        }
        let (dsn, schema) = take_schema(text)?;
        let target =
            PgTarget::resolve_as(&dsn, env, APPLICATION).map_err(|e| StoreError::BadLocation {
                shown: masked(text),
                why: e.0,
            })?;
        Ok(Location::Server(ServerStore {
            target,
            schema: schema.unwrap_or_else(|| DEFAULT_SCHEMA.to_owned()),
        }))
    }

    /// The store as messages show it: a file's path, or a server store's URL with the password
    /// masked and its schema.
    pub fn shown(&self) -> String {
        match self {
            Location::File(path) => path.display().to_string(),
            Location::Server(server) => server.shown(),
        }
    }
}

impl ServerStore {
    /// The masked URL, with `schema=` when it is not the default.
    pub fn shown(&self) -> String {
        let url = self.target.masked();
        if self.schema == DEFAULT_SCHEMA {
            return url;
        }
        let joiner = if url.contains('?') { '&' } else { '?' };
        format!("{url}{joiner}schema={}", self.schema)
    }

    /// The folder of this host's caches of the store whose `store_id` is `store_id`:
    /// `<cache root>/stores/<database>-<schema>-<digest>/`, the digest taken over the servers,
    /// database, schema and store id, so two stores never share a folder and a store recreated
    /// under the same name gets a fresh one.
    pub fn cache_dir(&self, store_id: &str) -> PathBuf {
        let mut hasher = Sha256::new();
        for endpoint in &self.target.endpoints {
            hasher.update(format!("{}:{}\n", endpoint.host, endpoint.port));
        }
        hasher.update(format!(
            "{}\n{}\n{}",
            self.target.dbname, self.schema, store_id
        ));
        let digest: String = hasher.finalize()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let readable: String = format!("{}-{}", self.target.dbname, self.schema)
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .take(48)
            .collect();
        cache_root()
            .join("stores")
            .join(format!("{readable}-{digest}"))
    }
}

/// `SLAYER_CACHE_DIR`, else `$XDG_CACHE_HOME/slayer`, else `~/.cache/slayer`, else a folder
/// under the system's temp dir.
pub fn cache_root() -> PathBuf {
    let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
    if let Some(dir) = var(crate::env::CACHE_DIR) {
        return PathBuf::from(dir);
    }
    crate::env::user_cache_dir().unwrap_or_else(|| std::env::temp_dir().join("slayer-cache"))
}

/// The store named by `--store` as messages show it (a server's password masked).
pub fn shown(store: &Path) -> String {
    match Location::parse(store) {
        Ok(location) => location.shown(),
        Err(_) => match store.to_str() {
            Some(text) if text.contains("://") || looks_like_dsn(text) => masked(text),
            _ => store.display().to_string(),
        },
    }
}

/// Splits the `schema` option (not libpq's) off a connection string: a URL's `schema=` query
/// parameter or a `schema=` word.
fn take_schema(dsn: &str) -> Result<(String, Option<String>), StoreError> {
    let mut schema = None;
    let rest = if dsn.contains("://") {
        match dsn.split_once('?') {
            None => dsn.to_owned(),
            Some((base, query)) => {
                let kept: Vec<&str> = query
                    .split('&')
                    .filter(|pair| match pair.strip_prefix("schema=") {
                        Some(value) => {
                            schema = Some(value.to_owned());
                            false
                        }
                        None => true,
                    })
                    .collect();
                if kept.is_empty() {
                    base.to_owned()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
        }
    } else {
        // Words as libpq reads them (spaces around `=`, quoted values), so a quoted value is
        // kept byte for byte and a `schema=` inside one is not taken for the option.
        let mut rest = String::with_capacity(dsn.len());
        let mut from = 0;
        for word in keyword_words(dsn).unwrap_or_default() {
            if word.key == "schema" {
                schema = Some(word.value);
                rest.push_str(&dsn[from..word.span.start]);
                from = word.span.end;
            }
        }
        rest.push_str(&dsn[from..]);
        rest
    };
    if let Some(name) = &schema {
        let valid = !name.is_empty()
            && name.len() <= 63
            && name
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
            && !name.starts_with(|c: char| c.is_ascii_digit())
            && !name.starts_with("pg_");
        if !valid {
            return Err(StoreError::BadLocation {
                shown: masked(dsn),
                why: format!(
                    "invalid schema '{name}': use lower-case letters, digits and _, starting with a letter (and not pg_)"
                ),
            });
        }
    }
    Ok((rest, schema))
}

/// Whether `store` is a server's connection string holding a password (or another secret) in
/// its own text, rather than leaving it to `PGPASSWORD` or `~/.pgpass`.
pub fn holds_secret(store: &Path) -> bool {
    let Some(text) = store.to_str().filter(|t| looks_like_dsn(t)) else {
        return false;
    };
    if text.contains("://") {
        return match url::Url::parse(text) {
            Ok(url) => {
                url.password().is_some() || url.query_pairs().any(|(key, _)| key == "password")
            }
            // Unparsable: whatever it holds is not shown, so say so when it may be a password.
            Err(_) => {
                let userinfo = text.split("://").nth(1).and_then(|r| r.rsplit_once('@'));
                userinfo.is_some_and(|(user, _)| user.contains(':'))
                    || text.to_ascii_lowercase().contains("password")
            }
        };
    }
    match keyword_words(text) {
        Some(words) => words.iter().any(|w| w.key == "password"),
        None => text.to_ascii_lowercase().contains("password"),
    }
}

/// A connection string as messages may show it: a URL with its secrets masked, a `key=value`
/// string with its password's value masked (all of it withheld when it cannot be read word by
/// word and names a password).
fn masked(text: &str) -> String {
    if text.contains("://") {
        return crate::secrets::masked_url(text);
    }
    match keyword_words(text) {
        Some(words) => {
            let mut out = String::with_capacity(text.len());
            let mut from = 0;
            for word in words.iter().filter(|w| w.key == "password") {
                out.push_str(&text[from..word.span.start]);
                out.push_str("password=****");
                from = word.span.end;
            }
            out.push_str(&text[from..]);
            out
        }
        None if text.to_ascii_lowercase().contains("password") => {
            "<a connection string holding a password, not shown>".to_owned()
        }
        None => text.to_owned(),
    }
}

/// One `key=value` word of a libpq keyword string, with its place in the string.
struct Word {
    key: String,
    value: String,
    span: std::ops::Range<usize>,
}

/// The words of a libpq keyword string (`key = value`, spaces allowed around `=`; a value bare
/// to the next space, or single-quoted with `\` escapes); `None` when it does not read so.
fn keyword_words(text: &str) -> Option<Vec<Word>> {
    let bytes = text.as_bytes();
    let mut words = Vec::new();
    let mut i = 0;
    let skip_spaces = |mut i: usize| {
        while i < bytes.len() && bytes[i].is_ascii_whitespace() {
            i += 1;
        }
        i
    };
    loop {
        i = skip_spaces(i);
        if i == bytes.len() {
            return Some(words);
        }
        let start = i;
        while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
            i += 1;
        }
        let key = text[start..i].to_owned();
        i = skip_spaces(i);
        if key.is_empty() || bytes.get(i) != Some(&b'=') {
            return None;
        }
        i = skip_spaces(i + 1);
        let mut value = String::new();
        if bytes.get(i) == Some(&b'\'') {
            i += 1;
            loop {
                match text[i..].chars().next()? {
                    '\'' => {
                        i += 1;
                        break;
                    }
                    '\\' => {
                        let c = text[i + 1..].chars().next()?;
                        value.push(c);
                        i += 1 + c.len_utf8();
                    }
                    c => {
                        value.push(c);
                        i += c.len_utf8();
                    }
                }
            }
        } else {
            let begin = i;
            while i < bytes.len() && !bytes[i].is_ascii_whitespace() {
                i += 1;
            }
            value.push_str(&text[begin..i]);
        }
        words.push(Word {
            key,
            value,
            span: start..i,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_password_in_the_store_s_own_text_is_seen() {
        for yes in [
            "postgres://ann:pw@db/slayer",
            "postgresql://db/slayer?password=pw",
            "host=db dbname=slayer password=pw",
        ] {
            assert!(holds_secret(Path::new(yes)), "{yes}");
        }
        for no in [
            "postgres://ann@db/slayer",
            "host=db dbname=slayer user=ann",
            "./slayer.db",
        ] {
            assert!(!holds_secret(Path::new(no)), "{no}");
        }
    }

    struct NoEnv;
    impl Environment for NoEnv {
        fn var(&self, _: &str) -> Option<String> {
            None
        }
        fn home(&self) -> Option<PathBuf> {
            None
        }
    }

    fn server(text: &str) -> ServerStore {
        match Location::parse_with(Path::new(text), &NoEnv).unwrap() {
            Location::Server(s) => s,
            Location::File(p) => panic!("{} read as a file", p.display()),
        }
    }

    #[test]
    fn files_urls_and_keyword_strings() {
        assert!(matches!(
            Location::parse_with(Path::new("slayer.db"), &NoEnv).unwrap(),
            Location::File(_)
        ));
        let s = server("postgres://team:s3cret@db.example:5433/kb?schema=agents&sslmode=require");
        assert_eq!(s.schema, "agents");
        assert_eq!(s.target.dbname, "kb");
        assert_eq!(s.target.password(), Some("s3cret"));
        let shown = s.shown();
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("schema=agents"), "{shown}");
        let k = server("host=/tmp/pg user=u dbname=kb schema=team_b");
        assert_eq!(k.schema, "team_b");
        assert_eq!(k.target.user, "u");
        assert_eq!(server("postgres://u@h/kb").schema, DEFAULT_SCHEMA);
    }

    #[test]
    fn bad_schemas_and_other_schemes_are_refused_masked() {
        for bad in [
            "postgres://u:s3cret@h/kb?schema=Bad-Name",
            "mysql://u:s3cret@h/kb",
            "postgres://u:s3cret@h/kb?bogus=1",
        ] {
            let err = Location::parse_with(Path::new(bad), &NoEnv)
                .unwrap_err()
                .to_string();
            assert!(!err.contains("s3cret"), "{err}");
        }
    }

    #[test]
    fn keyword_strings_keep_quoted_values_and_never_show_the_password() {
        let k = server("host=/tmp/pg user=u password='a  b schema=x' dbname = kb schema = team_c");
        assert_eq!(k.schema, "team_c");
        assert_eq!(k.target.password(), Some("a  b schema=x"));
        assert_eq!(k.target.dbname, "kb");
        for bad in [
            "host=db user=u password=s3cret dbname=kb schema=Team",
            "host=db user=u password='s3cret x' dbname=kb port=notaport",
            "host=db user=u password=s3cret sslmode=sometimes",
            "host=db password='s3cret",
        ] {
            let err = Location::parse_with(Path::new(bad), &NoEnv)
                .unwrap_err()
                .to_string();
            assert!(!err.contains("s3cret"), "{err}");
        }
        assert!(!shown(Path::new("host=db password=s3cret port=x")).contains("s3cret"));
    }

    #[test]
    fn cache_dirs_differ_by_schema_and_store_id() {
        let a = server("postgres://u@h/kb");
        let b = server("postgres://u@h/kb?schema=other");
        assert_ne!(a.cache_dir("1"), b.cache_dir("1"));
        assert_ne!(a.cache_dir("1"), a.cache_dir("2"));
        assert_eq!(a.cache_dir("1"), a.cache_dir("1"));
    }
}
