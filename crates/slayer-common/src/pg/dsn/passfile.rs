//! libpq's password file (`~/.pgpass`, or `passfile` / `PGPASSFILE`).

use std::path::Path;

use super::{default_host, PgTarget};

/// The first matching line of a libpq password file
/// (`hostname:port:database:username:password`, `*` matches anything, `\` escapes). As libpq
/// does, a file that others may read is ignored, and a socket connection matches `localhost`.
pub(super) fn password_from_file(path: &Path, target: &PgTarget) -> Option<String> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::metadata(path).ok()?;
    if !meta.is_file() || meta.permissions().mode() & 0o077 != 0 {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let endpoint = target.endpoints.first()?;
    // libpq: its default socket directory reads as `localhost`; any other path as itself.
    let host = if endpoint.is_socket() && endpoint.host == default_host() {
        "localhost".to_owned()
    } else {
        endpoint.host.clone()
    };
    let port = endpoint.port.to_string();
    let wanted = [host.as_str(), port.as_str(), &target.dbname, &target.user];
    text.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .find_map(|line| {
            let fields = split_pgpass(line);
            if fields.len() < 5 {
                return None;
            }
            let matches = fields[..4]
                .iter()
                .zip(wanted)
                .all(|((field, escaped), want)| (field == "*" && !escaped) || field == want);
            matches.then(|| fields[4].0.clone())
        })
}

/// The fields of a password-file line, each with whether it held an escape (so `\*` is a
/// literal star, not the wildcard).
fn split_pgpass(line: &str) -> Vec<(String, bool)> {
    let mut fields = vec![(String::new(), false)];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        let Some((field, escaped)) = fields.last_mut() else {
            break;
        };
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    field.push(next);
                    *escaped = true;
                }
            }
            ':' => fields.push((String::new(), false)),
            c => field.push(c),
        }
    }
    fields
}
