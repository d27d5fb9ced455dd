//! SQLite's failures told as sentences that name the store and the fix.

use std::path::Path;

use super::BUSY_TIMEOUT;

/// SQLite's failure on the store at `store` as a sentence that names the file and the fix, for
/// the failures a user can do something about; `None` for the rest (told as SQLite says them).
pub fn explain_sqlite(e: &rusqlite::Error, store: &Path) -> Option<String> {
    use rusqlite::ErrorCode as Code;
    let rusqlite::Error::SqliteFailure(failure, _) = e else {
        return None;
    };
    let (path, code) = (store.display(), failure.extended_code);
    // The shared-memory calls (xShmMap and its kin): SQLITE_IOERR_SHMOPEN, _SHMSIZE, _SHMLOCK,
    // _SHMMAP.
    let shared_memory = matches!(code, 4618 | 4874 | 5130 | 5386);
    Some(match failure.code {
        Code::SystemIoFailure if shared_memory => format!(
            "cannot use the store's shared-memory file {path}-shm (SQLite: {e}, code {code}): the folder holding the store must be writable by this process, or the -shm file there readable; a store on a network file system cannot be shared this way"
        ),
        Code::SystemIoFailure => format!(
            "cannot read or write the store at {path} (SQLite: {e}, code {code}): check that the disk is healthy and has room, and that the file was not cut short, moved or replaced while in use"
        ),
        Code::ReadOnly => format!(
            "the store at {path} cannot be written by this process (SQLite: {e}): run the command as a user who can write the file and its folder, or make them writable; commands that only read (search, list, show, export, stats) work as they are"
        ),
        Code::DatabaseBusy | Code::DatabaseLocked => format!(
            "the store at {path} stayed locked by another process for {} s (SQLite: {e}): let the other slayer command (a load, an import) finish, then run this one again; nothing was written",
            BUSY_TIMEOUT.as_secs()
        ),
        Code::DatabaseCorrupt => format!(
            "the store at {path} is damaged (SQLite: {e}): restore it from a backup, or save what is readable with `sqlite3 {path} .recover | sqlite3 recovered.db` and point --store at that"
        ),
        Code::DiskFull => format!(
            "the disk holding the store at {path} is full (SQLite: {e}): free some space and run the command again; nothing was written"
        ),
        Code::CannotOpen => format!(
            "cannot open the store at {path} (SQLite: {e}): check that its folder exists and this process may read it (and write it, for a command that writes)"
        ),
        _ => return None,
    })
}
