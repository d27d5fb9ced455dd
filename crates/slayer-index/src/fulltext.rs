//! The persistent tantivy index of a store: beside an SQLite file (`<store>.index/`), or in
//! this host's cache folder of a server store.
//!
//! It is derived data. Beside a file: the store's `docs` table says what it should hold,
//! `index_state` says what it does hold, and the tantivy commit payload carries a generation
//! token that must equal the store's. A mismatch (index deleted, copied, or a crash between the
//! two commits) triggers a full rebuild; otherwise only the docs whose content hash changed are
//! rewritten. A server store's cache records in its own payload the docs change counter it
//! caught up with, and catches up from the store's change log (nothing is written to the
//! store, so every host keeps its own cache, whatever its role).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use slayer_common::records::Model;
use slayer_common::store::rows::{IndexLag, StoredDoc};
use std::sync::Arc;

use slayer_common::store::{OpenMode, Store, StoreRead, StoreWrite};
use tantivy::directory::error::{DeleteError, LockError, OpenReadError, OpenWriteError};
use tantivy::directory::{
    Directory, DirectoryLock, FileHandle, Lock, MmapDirectory, WatchCallback, WatchHandle, WritePtr,
};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STORED, STRING,
};
use tantivy::{Index, IndexReader, IndexWriter, ReloadPolicy, TantivyDocument, TantivyError, Term};

use crate::error::IndexError;

/// The settings key holding the generation token the index must carry.
const GENERATION_KEY: &str = "fulltext_generation";
/// The settings key holding the docs change counter the index last caught up with (the
/// store's change log reads it to compare only the docs changed since).
const SYNCED_VERSION_KEY: &str = slayer_common::store::sqlite::docs::FULLTEXT_SYNCED_VERSION;
/// What a server store's cached index writes before the docs change counter it holds, in its
/// commit's payload.
const CACHE_PAYLOAD: &str = "docs-version ";
/// Indexing heap of the single writer thread.
const WRITER_HEAP: usize = 50_000_000;
/// How long to wait for another process's writer.
const LOCK_WAIT: Duration = Duration::from_secs(60);

/// The index's fields (docs/spec/channels.md §6.1, `datasource` included for filtering).
#[derive(Debug, Clone, Copy)]
pub struct Fields {
    /// Doc id: the canonical id, or `memory:<id>` (raw; a fast field, so rankings read ids
    /// without decompressing stored docs).
    pub id: Field,
    /// datasource/model/column/measure/aggregation/memory (raw).
    pub kind: Field,
    /// Exact-match canonical: the canonical id, or the bare memory id (raw).
    pub canonical: Field,
    /// Owning datasource(s); a memory carries one value per datasource its tags are rooted at.
    pub datasource: Field,
    /// The rendered text, analyzed ([`crate::analysis`]), with positions.
    pub text: Field,
    /// An entity's own name and label, analyzed the same way: a question's words that name an
    /// entity count apart from words its description happens to use. Empty for memories.
    pub name: Field,
    /// A column's value index (docs/spec/profile.md §12.4), analyzed the same way: a question that
    /// names a value finds the column holding it. Empty for every other doc.
    pub values: Field,
    /// A measure's plain words for the jargon of its name ([`crate::reporting_terms`]), analyzed
    /// the same way: a field of its own, so that they neither lengthen the name field (a name
    /// the question says outright keeps its weight) nor count as the name. Empty for every
    /// other doc.
    pub related: Field,
}

/// Builds the schema.
pub fn schema() -> (Schema, Fields) {
    let mut builder = Schema::builder();
    let analyzer = crate::analysis::ANALYZER;
    let text_options = TextOptions::default()
        .set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer(analyzer)
                .set_index_option(IndexRecordOption::WithFreqsAndPositions),
        )
        .set_stored();
    let name_options = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(analyzer)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        id: builder.add_text_field("id", STRING | STORED | FAST),
        kind: builder.add_text_field("kind", STRING | STORED),
        canonical: builder.add_text_field("canonical", STRING | STORED),
        datasource: builder.add_text_field("datasource", STRING | STORED),
        text: builder.add_text_field("text", text_options),
        name: builder.add_text_field("name", name_options.clone()),
        values: builder.add_text_field("values", name_options.clone()),
        related: builder.add_text_field("related", name_options),
    };
    (builder.build(), fields)
}

/// What a sync did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SyncReport {
    /// The index was recreated from all docs.
    pub rebuilt: bool,
    /// Docs (re)written.
    pub upserted: usize,
    /// Docs dropped.
    pub deleted: usize,
}

/// An open full-text index.
pub struct FullText {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    dir: PathBuf,
}

impl FullText {
    /// Opens the index of `store`, creating or recreating it when absent or unreadable, and
    /// brings it up to date with the store before returning.
    pub fn open_synced(store: &mut Store) -> Result<(FullText, SyncReport), IndexError> {
        let fulltext = FullText::open_or_create(&store.index_dir())?;
        let report = fulltext.sync(store, false)?;
        Ok((fulltext, report))
    }

    /// Opens an existing index without writing to it (a read-only folder or files are fine);
    /// `None` when there is none or it has another schema.
    pub fn open_existing(dir: &Path) -> Result<Option<FullText>, IndexError> {
        if !dir.join("meta.json").exists() {
            return Ok(None);
        }
        let directory = MmapDirectory::open(dir).map_err(TantivyError::from)?;
        let index = Index::open(ReadOnlyLocks(directory))?;
        if index.schema() != schema().0 {
            return Ok(None);
        }
        FullText::from_index(index, dir).map(Some)
    }

    /// The index as a reader needs it: the one on disk when it is current; else caught up
    /// through a writer connection when the store and its folder may be written (a server
    /// store's index is this host's cache, caught up through the reader's own connection,
    /// which never writes the store); else (a read-only store or folder) a copy built in
    /// memory from the store's docs. Readers thus never fail for want of write access, and
    /// never search a stale index.
    pub fn open_for_reading(store: &Store) -> Result<FullText, IndexError> {
        let dir = store.index_dir();
        if let Ok(Some(fulltext)) = FullText::open_existing(&dir) {
            if fulltext.is_current(store, &store.docs_version()?)? {
                return Ok(fulltext);
            }
        }
        if store.is_server() {
            return FullText::open_cache(store, &dir);
        }
        let caught_up = {
            Store::open(store.path(), OpenMode::MustExist)
                .map_err(IndexError::from)
                .and_then(|mut writer| FullText::open_synced(&mut writer))
                .map(|(fulltext, _)| fulltext)
        };
        match caught_up {
            Ok(fulltext) => Ok(fulltext),
            Err(_) => FullText::in_memory(store, &dir),
        }
    }

    /// This host's cache of a server store's index in `dir`, caught up through `reader` (a
    /// search's own connection, in its snapshot: the cache's sync only reads the store); built
    /// in memory when the folder cannot be written.
    pub fn open_cache(reader: &dyn StoreRead, dir: &Path) -> Result<FullText, IndexError> {
        if let Ok(Some(fulltext)) = FullText::open_existing(dir) {
            if fulltext.synced_version()? == Some(reader.docs_version()?) {
                // Loaded before the version was read: reload, so it holds at least that.
                fulltext.reader.reload()?;
                return Ok(fulltext);
            }
        }
        let caught_up = FullText::open_or_create(dir)
            .and_then(|fulltext| fulltext.sync_cache(reader, false).map(|_| fulltext));
        match caught_up {
            Ok(fulltext) => Ok(fulltext),
            Err(_) => FullText::in_memory(reader, dir),
        }
    }

    /// Every doc of the store in an index in memory, in the order of a full rebuild.
    fn in_memory(store: &dyn StoreRead, dir: &Path) -> Result<FullText, IndexError> {
        let (schema, fields) = schema();
        let index = Index::create_in_ram(schema);
        crate::analysis::register(&index);
        let mut writer: IndexWriter<TantivyDocument> =
            index.writer_with_num_threads(1, WRITER_HEAP)?;
        let mut last_model = None;
        let all = store.all_docs()?;
        let roots = memory_roots(store, &all)?;
        for stored in &all {
            writer.add_document(document(fields, store, stored, &roots, &mut last_model)?)?;
        }
        writer.commit()?;
        FullText::from_index(index, dir)
    }

    fn open_or_create(dir: &Path) -> Result<FullText, IndexError> {
        let (expected, _) = schema();
        if dir.join("meta.json").exists() {
            match Index::open_in_dir(dir) {
                Ok(index) if index.schema() == expected => {
                    return match FullText::from_index(index.clone(), dir) {
                        Ok(fulltext) => Ok(fulltext),
                        // Its meta is sound but a segment is not (a file overwritten, cut
                        // short): drop every segment under the writer lock, so no other
                        // writer loses work; the store's generation no longer matches, so
                        // the sync that follows rebuilds it whole.
                        Err(_) => {
                            drop_segments(&index, dir)?;
                            FullText::from_index(index, dir)
                        }
                    };
                }
                // An index of another schema or an unreadable one is derived data: recreate it.
                _ => std::fs::remove_dir_all(dir).map_err(|source| IndexError::IndexDir {
                    path: dir.to_owned(),
                    source,
                })?,
            }
        }
        std::fs::create_dir_all(dir).map_err(|source| IndexError::IndexDir {
            path: dir.to_owned(),
            source,
        })?;
        let index = match Index::create_in_dir(dir, expected) {
            Ok(index) => index,
            // Another process created it between our check and our create.
            Err(TantivyError::IndexAlreadyExists) => Index::open_in_dir(dir)?,
            Err(e) => return Err(e.into()),
        };
        FullText::from_index(index, dir)
    }

    fn from_index(index: Index, dir: &Path) -> Result<FullText, IndexError> {
        crate::analysis::register(&index);
        let (_, fields) = schema();
        // tantivy asserts, rather than returns an error, when a segment file is shorter than
        // its footer (a file cut short or overwritten): a damaged cache must be rebuilt, so
        // that panic is caught here and read as the damage it is.
        let reader = without_panic_message(|| {
            index
                .reader_builder()
                .reload_policy(ReloadPolicy::Manual)
                .try_into()
        })
        .unwrap_or_else(|| {
            Err(TantivyError::InternalError(format!(
                "a segment file of the index at {} is damaged",
                dir.display()
            )))
        })?;
        Ok(FullText {
            index,
            reader,
            fields,
            dir: dir.to_owned(),
        })
    }

    /// The fields, for building queries.
    pub fn fields(&self) -> Fields {
        self.fields
    }

    /// The underlying tantivy index.
    pub fn index(&self) -> &Index {
        &self.index
    }

    /// A searcher over the last commit this handle has seen.
    pub fn searcher(&self) -> tantivy::Searcher {
        self.reader.searcher()
    }

    /// Number of docs in the index.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// The generation token of the last commit.
    pub fn generation(&self) -> Result<Option<String>, IndexError> {
        Ok(self.index.load_metas()?.payload)
    }

    /// Brings the index up to date with the store (or rebuilds it from scratch).
    pub fn sync(&self, store: &mut Store, force_rebuild: bool) -> Result<SyncReport, IndexError> {
        if store.is_server() {
            return self.sync_cache(&*store, force_rebuild);
        }
        // The counter is read before the docs, so recording it after the sync is conservative:
        // a change made meanwhile leaves the counter ahead and the next open checks again.
        let docs_version = store.docs_version()?;
        if !force_rebuild && self.is_current(store, &docs_version)? {
            // The common case for readers: no writer, no lock, no diff of the docs.
            return Ok(SyncReport::default());
        }
        // Hold the writer lock while deciding, so concurrent syncs serialize.
        let writer = self.lock_writer()?;
        let stored_generation = store.setting(GENERATION_KEY)?;
        let rebuild =
            force_rebuild || stored_generation.is_none() || self.generation()? != stored_generation;
        let lag = if rebuild {
            IndexLag {
                upserts: store.all_docs()?,
                deletes: Vec::new(),
            }
        } else {
            store.index_lag()?
        };
        if !rebuild && lag.is_empty() {
            let tx = store.write()?;
            tx.set_setting(SYNCED_VERSION_KEY, &docs_version)?;
            tx.commit()
                .map_err(slayer_common::store::StoreError::from)?;
            return Ok(SyncReport::default());
        }
        let generation = new_generation();
        self.write_lag(writer, &*store, &lag, rebuild, &generation)?;
        let tx = store.write()?;
        if rebuild {
            tx.clear_index_state()?;
        }
        tx.mark_indexed(&lag)?;
        tx.set_setting(GENERATION_KEY, &generation)?;
        tx.set_setting(SYNCED_VERSION_KEY, &docs_version)?;
        tx.commit()
            .map_err(slayer_common::store::StoreError::from)?;
        self.reader.reload()?;
        Ok(SyncReport {
            rebuilt: rebuild,
            upserted: lag.upserts.len(),
            deleted: lag.deletes.len(),
        })
    }

    /// Brings this host's cache of a server store's index up to date: the index records the
    /// docs change counter it holds in its own commit, and catches up with the store's change
    /// log from there (or rebuilds when it records none). Nothing is written to the store, so
    /// a role that may only read keeps its cache current.
    fn sync_cache(
        &self,
        store: &dyn StoreRead,
        force_rebuild: bool,
    ) -> Result<SyncReport, IndexError> {
        // Read before the changes: recording it after the sync is conservative.
        let docs_version = store.docs_version()?;
        // The version is read from the commit on disk, the searcher from the reader: another
        // process of this host may have committed since the reader was loaded, so a current
        // version reloads the reader before it is trusted.
        if !force_rebuild && self.synced_version()?.as_deref() == Some(docs_version.as_str()) {
            self.reader.reload()?;
            return Ok(SyncReport::default());
        }
        let writer = self.lock_writer()?;
        // Another process of this host may have caught up while we waited for the lock.
        let synced = self.synced_version()?;
        if !force_rebuild && synced.as_deref() == Some(docs_version.as_str()) {
            self.reader.reload()?;
            return Ok(SyncReport::default());
        }
        let changed = match (&synced, force_rebuild) {
            (Some(since), false) => store.docs_changed_since(since)?,
            _ => None,
        };
        let rebuild = changed.is_none();
        let lag = match changed {
            Some(lag) => lag,
            None => IndexLag {
                upserts: store.all_docs()?,
                deletes: Vec::new(),
            },
        };
        let payload = format!("{CACHE_PAYLOAD}{docs_version}");
        self.write_lag(writer, store, &lag, rebuild, &payload)?;
        self.reader.reload()?;
        Ok(SyncReport {
            rebuilt: rebuild,
            upserted: lag.upserts.len(),
            deleted: lag.deletes.len(),
        })
    }

    /// Writes `lag` (everything anew when `rebuild`) and commits it with `payload`.
    fn write_lag(
        &self,
        mut writer: IndexWriter<TantivyDocument>,
        store: &dyn StoreRead,
        lag: &IndexLag,
        rebuild: bool,
        payload: &str,
    ) -> Result<(), IndexError> {
        if rebuild {
            writer.delete_all_documents()?;
        }
        for id in lag.deletes.iter() {
            writer.delete_term(Term::from_field_text(self.fields.id, id));
        }
        let mut last_model = None;
        let roots = memory_roots(store, &lag.upserts)?;
        for stored in &lag.upserts {
            if !rebuild {
                writer.delete_term(Term::from_field_text(
                    self.fields.id,
                    &stored.doc.canonical_id,
                ));
            }
            writer.add_document(document(
                self.fields,
                store,
                stored,
                &roots,
                &mut last_model,
            )?)?;
        }
        let mut prepared = writer.prepare_commit()?;
        prepared.set_payload(payload);
        prepared.commit()?;
        writer.wait_merging_threads()?;
        Ok(())
    }

    /// The docs change counter a server store's cached index last caught up with.
    fn synced_version(&self) -> Result<Option<String>, IndexError> {
        Ok(self
            .generation()?
            .and_then(|p| p.strip_prefix(CACHE_PAYLOAD).map(str::to_owned)))
    }

    /// Whether the index carries the store's generation and has caught up with the docs counter.
    fn is_current(&self, store: &Store, docs_version: &str) -> Result<bool, IndexError> {
        if store.is_server() {
            return Ok(self.synced_version()?.as_deref() == Some(docs_version));
        }
        let stored_generation = store.setting(GENERATION_KEY)?;
        Ok(stored_generation.is_some()
            && store.setting(SYNCED_VERSION_KEY)?.as_deref() == Some(docs_version)
            && self.generation()? == stored_generation)
    }

    /// What the index lacks of the store's docs.
    pub fn lag(&self, store: &Store) -> Result<IndexLag, IndexError> {
        if store.is_server() {
            return Ok(match self.synced_version()? {
                Some(since) => store.docs_changed_since(&since)?.unwrap_or_default(),
                None => IndexLag {
                    upserts: store.all_docs()?,
                    deletes: Vec::new(),
                },
            });
        }
        Ok(store.index_lag()?)
    }

    /// Whether this index holds exactly what the store says it should.
    pub fn agrees_with(&self, store: &Store) -> Result<bool, IndexError> {
        if store.is_server() {
            return Ok(self.synced_version()? == Some(store.docs_version()?)
                && self.num_docs() as i64 == store.doc_count()?);
        }
        let stored_generation = store.setting(GENERATION_KEY)?;
        Ok(stored_generation.is_some()
            && self.generation()? == stored_generation
            && store.index_lag()?.is_empty()
            && self.num_docs() as i64 == store.indexed_count()?)
    }

    /// The writer, with the files no commit names cleared first: a writer killed before its
    /// commit leaves them (a segment, a delete file), and the next writer doing the same
    /// operations from the same commit would name a file the same and fail on it, every time.
    fn lock_writer(&self) -> Result<IndexWriter<TantivyDocument>, IndexError> {
        let writer = wait_for_writer(&self.index, &self.dir)?;
        writer.garbage_collect_files().wait()?;
        Ok(writer)
    }
}

/// The datasources each memory doc of `docs` is tagged under, read in one batch (a server
/// store pays a round trip per read).
fn memory_roots(
    store: &dyn StoreRead,
    docs: &[StoredDoc],
) -> Result<HashMap<String, Vec<String>>, IndexError> {
    let ids: Vec<&str> = docs
        .iter()
        .filter_map(|d| slayer_common::canonical::memory_id_of(&d.doc.canonical_id))
        .collect();
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    Ok(store.memories_datasources(&ids)?)
}

/// The tantivy document of a stored doc; `last_model` keeps the model a value index was last
/// read from (docs come model by model, so its columns read it once).
fn document(
    f: Fields,
    store: &dyn StoreRead,
    stored: &StoredDoc,
    memory_roots: &HashMap<String, Vec<String>>,
    last_model: &mut Option<Model>,
) -> Result<TantivyDocument, IndexError> {
    let d = &stored.doc;
    let mut doc = TantivyDocument::default();
    doc.add_text(f.id, &d.canonical_id);
    doc.add_text(f.kind, &d.doc_kind);
    match slayer_common::canonical::memory_id_of(&d.canonical_id) {
        Some(memory_id) => {
            doc.add_text(f.canonical, memory_id);
            for ds in memory_roots.get(memory_id).into_iter().flatten() {
                doc.add_text(f.datasource, ds);
            }
        }
        None => {
            doc.add_text(f.canonical, &d.canonical_id);
            if let Some(ds) = &d.datasource {
                doc.add_text(f.datasource, ds);
            }
        }
    }
    doc.add_text(f.text, &d.text);
    for value in value_index(store, stored, last_model)? {
        doc.add_text(f.values, &value);
    }
    if let Some(name) = entity_name(stored) {
        doc.add_text(f.name, name);
        // The renderer's `Label:` line (docs/spec/render.md §2.4, §2.5), and the synonyms an
        // importer wrote into the description (`Synonyms: a, b.`, Apache Ossie's `ai_context`): a
        // synonym names the object as much as its name does.
        let label = d.text.lines().find_map(|l| l.strip_prefix("Label: "));
        if let Some(label) = label {
            doc.add_text(f.name, label);
        }
        // `churnedMrr` is found by "recurring revenue" too (docs/spec/channels.md §6.2), and a
        // measure by the plain words of its name's jargon ("lost from customers who cancelled").
        let name_words = crate::render::words(&format!("{name} {}", label.unwrap_or("")));
        let spelled = crate::abbreviations::spelled_in(&name_words);
        if !spelled.is_empty() {
            doc.add_text(f.name, spelled);
        }
        if d.doc_kind == "measure" {
            let plain = crate::reporting_terms::related_in(&name_words);
            if !plain.is_empty() {
                doc.add_text(f.related, plain);
            }
            // What its formula reads (`render::formula_reads`), beside its text.
            let reads = d
                .embedding_text
                .as_deref()
                .and_then(|e| e.lines().find_map(|l| l.strip_prefix(crate::render::READS)));
            if let Some(reads) = reads {
                doc.add_text(f.text, reads);
            }
        }
        if let Some(synonyms) = d.text.lines().find_map(|l| l.strip_prefix("Synonyms: ")) {
            doc.add_text(f.name, synonyms);
        }
    }
    Ok(doc)
}

/// A column doc's value index, read from its model. Only a column whose values overflow its
/// top 50 can have one, and only its doc says `Distinct count:` (docs/spec/render.md §2.4), so no
/// other doc costs a read.
fn value_index(
    store: &dyn StoreRead,
    stored: &StoredDoc,
    last_model: &mut Option<Model>,
) -> Result<Vec<String>, IndexError> {
    let d = &stored.doc;
    if d.doc_kind != "column" || !d.text.lines().any(|l| l.starts_with("Distinct count: ")) {
        return Ok(Vec::new());
    }
    let (Some(ds), Some(name)) = (d.datasource.as_deref(), stored.model.as_deref()) else {
        return Ok(Vec::new());
    };
    let Some(leaf) = d.canonical_id.strip_prefix(&format!("{ds}.{name}.")) else {
        return Ok(Vec::new());
    };
    let cached = last_model
        .as_ref()
        .is_some_and(|m| m.data_source == ds && m.name == name);
    if !cached {
        *last_model = store.model(ds, name)?;
    }
    Ok(last_model
        .iter()
        .flat_map(|m| &m.columns)
        .find(|c| c.name == leaf)
        .and_then(|c| c.value_index.clone())
        .unwrap_or_default())
}

/// An entity's own name: the datasource's, the model's, or the leaf's (the canonical id past
/// its model's); `None` for a memory.
fn entity_name(stored: &StoredDoc) -> Option<&str> {
    let d = &stored.doc;
    match d.doc_kind.as_str() {
        "memory" => None,
        "datasource" => Some(&d.canonical_id),
        "model" => d
            .datasource
            .as_deref()
            .and_then(|ds| d.canonical_id.strip_prefix(ds)?.strip_prefix('.')),
        _ => {
            let ds = d.datasource.as_deref()?;
            let model = stored.model.as_deref()?;
            d.canonical_id
                .strip_prefix(ds)?
                .strip_prefix('.')?
                .strip_prefix(model)?
                .strip_prefix('.')
        }
    }
}

/// The index folder as readers open it: tantivy takes a lock file while it opens segments (so a
/// writer's cleanup waits); where the folder cannot be written there is no writer to wait for,
/// and reading goes on without the lock.
#[derive(Debug, Clone)]
struct ReadOnlyLocks(MmapDirectory);

impl Directory for ReadOnlyLocks {
    fn get_file_handle(&self, path: &Path) -> Result<Arc<dyn FileHandle>, OpenReadError> {
        self.0.get_file_handle(path)
    }
    fn delete(&self, path: &Path) -> Result<(), DeleteError> {
        self.0.delete(path)
    }
    fn exists(&self, path: &Path) -> Result<bool, OpenReadError> {
        self.0.exists(path)
    }
    fn open_write(&self, path: &Path) -> Result<WritePtr, OpenWriteError> {
        self.0.open_write(path)
    }
    fn atomic_read(&self, path: &Path) -> Result<Vec<u8>, OpenReadError> {
        self.0.atomic_read(path)
    }
    fn atomic_write(&self, path: &Path, data: &[u8]) -> std::io::Result<()> {
        self.0.atomic_write(path, data)
    }
    fn sync_directory(&self) -> std::io::Result<()> {
        self.0.sync_directory()
    }
    fn acquire_lock(&self, lock: &Lock) -> Result<DirectoryLock, LockError> {
        match self.0.acquire_lock(lock) {
            Err(LockError::IoError(_)) => Ok(DirectoryLock::from(Box::new(()))),
            other => other,
        }
    }
    fn watch(&self, callback: WatchCallback) -> tantivy::Result<WatchHandle> {
        self.0.watch(callback)
    }
}

/// `f()`, or `None` when it panics, without the panic's message on stderr.
fn without_panic_message<T>(f: impl FnOnce() -> T) -> Option<T> {
    // The hook is process-wide; a panic on another thread meanwhile would lose its message,
    // not its unwinding. Opening an index takes milliseconds.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    std::panic::set_hook(hook);
    outcome.ok()
}

/// The index's writer, waiting up to [`LOCK_WAIT`] for another process to let go of it.
fn wait_for_writer(index: &Index, dir: &Path) -> Result<IndexWriter<TantivyDocument>, IndexError> {
    let start = Instant::now();
    loop {
        match index.writer_with_num_threads(1, WRITER_HEAP) {
            Ok(writer) => return Ok(writer),
            Err(TantivyError::LockFailure(LockError::LockBusy, _))
                if start.elapsed() < LOCK_WAIT =>
            {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(TantivyError::LockFailure(LockError::LockBusy, _)) => {
                return Err(IndexError::IndexBusy(dir.to_owned()))
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// Empties an index whose segments cannot be read, committing under the writer lock; tantivy
/// deletes the old segment files.
fn drop_segments(index: &Index, dir: &Path) -> Result<(), IndexError> {
    let mut writer = wait_for_writer(index, dir)?;
    writer.delete_all_documents()?;
    writer.commit()?;
    writer.wait_merging_threads()?;
    Ok(())
}

fn new_generation() -> String {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!("{nanos:x}-{:x}", std::process::id())
}
