//! Save, forget and import, each in one store transaction with the memory docs re-rendered.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::Value;
use slayer_common::canonical::check_memory_id;
use slayer_common::limits::Limits;
use slayer_common::records::{Memory, Occasion, Standing, Tier};
use slayer_common::store::rows::StoredDoc;
use slayer_common::store::{StoreRead, StoreWrite};
use slayer_index::catalog::refresh_memory_doc;

use crate::extract::query_entities;
use crate::resolve::{Catalog, Lookup, Resolution};
use crate::MemoryError;

/// The longest description the original accepts.
pub const MAX_DESCRIPTION: usize = 500;

/// What a save is asked to do.
#[derive(Debug, Clone, Default)]
pub struct SaveRequest {
    /// The note.
    pub learning: String,
    /// Entity references (the learning form).
    pub entities: Option<Vec<String>>,
    /// A SlayerQuery (the query-bearing form); its entities are extracted.
    pub query: Option<Value>,
    /// A chosen id; allocated when absent.
    pub id: Option<String>,
    /// One-line summary.
    pub description: Option<String>,
    /// Tier, trust and owners (default: a plain lesson).
    pub standing: Standing,
    /// When it happened and the session it came from (default: neither).
    pub occasion: Occasion,
}

impl SaveRequest {
    /// Every field within its limit (docs/spec/limits.md §16), before anything is opened for
    /// writing.
    pub fn check_limits(&self, limits: &Limits) -> Result<(), MemoryError> {
        check_fields(
            limits,
            &self.learning,
            self.id.as_deref(),
            self.entities.iter().flatten().map(String::as_str),
            self.query.as_ref(),
            &self.standing,
            &self.occasion,
        )
    }
}

/// A memory's fields within `limits`: learning, id, entity references, query, owners and
/// session.
pub fn check_fields<'a>(
    limits: &Limits,
    learning: &str,
    id: Option<&str>,
    entities: impl IntoIterator<Item = &'a str>,
    query: Option<&Value>,
    standing: &Standing,
    occasion: &Occasion,
) -> Result<(), MemoryError> {
    let name = |field: &str, value: Option<&str>| match value {
        Some(v) => Limits::check_len(field, v, limits.name_bytes, "name_bytes"),
        None => Ok(()),
    };
    Limits::check_len(
        "learning",
        learning,
        limits.learning_bytes,
        "learning_bytes",
    )
    .and_then(|_| name("id", id))
    .and_then(|_| name("project", standing.project.as_deref()))
    .and_then(|_| name("agent", standing.agent.as_deref()))
    .and_then(|_| name("session", occasion.session.as_deref()))
    .and_then(|_| limits.check_names("entities", entities))
    .and_then(|_| query.map_or(Ok(()), |q| limits.check_query("query", q)))
    .map_err(|e| MemoryError::Input(format!("{e}.")))
}

/// What a save did (the original's `SaveMemoryResponse`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SaveOutcome {
    /// The id saved under.
    pub memory_id: String,
    /// Canonical entities stored.
    pub resolved_entities: Vec<String>,
    /// Non-fatal warnings.
    pub warnings: Vec<String>,
    /// Saved as proposed: no search returns it until a person approves it (left out of the
    /// JSON when false, so the original's response is unchanged).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub proposed: bool,
}

impl SaveOutcome {
    /// The text the CLI prints for a save (`Saved memory <id>.`, the resolved entities,
    /// `Warning: ` lines); the MCP server's `save_memory` answers with the same.
    pub fn to_text(&self) -> String {
        let mut text = if self.proposed {
            format!(
                "Saved memory {} as proposed: no search returns it until a person approves it (slayer-memory approve {}).",
                self.memory_id, self.memory_id
            )
        } else {
            format!("Saved memory {}.", self.memory_id)
        };
        if !self.resolved_entities.is_empty() {
            text.push_str(&format!(
                "\nResolved entities: {}",
                self.resolved_entities.join(", ")
            ));
        }
        for w in &self.warnings {
            text.push_str(&format!("\nWarning: {w}"));
        }
        text
    }
}

/// The text the CLI prints for a forget, with the index warning if there was one.
pub fn forgotten_text(id: &str, warning: Option<&str>) -> String {
    let mut text = format!("Forgot memory {id}.");
    if let Some(w) = warning {
        text.push_str(&format!("\nWarning: {w}"));
    }
    text
}

struct StoreLookup<'a>(&'a dyn StoreRead);

impl Lookup for StoreLookup<'_> {
    fn memory_exists(&self, id: &str) -> Result<bool, slayer_common::store::StoreError> {
        self.0.memory_exists(id)
    }
}

/// The stored catalog, for resolution.
pub fn load_catalog(store: &dyn StoreRead) -> Result<Catalog, MemoryError> {
    let mut datasources: BTreeSet<String> =
        store.datasources()?.into_iter().map(|d| d.name).collect();
    let models = store.model_skeletons()?;
    datasources.extend(models.iter().map(|m| m.data_source.clone()));
    Ok(Catalog {
        datasources,
        models,
    })
}

/// Resolves one reference against the catalog.
pub fn resolve_ref(
    store: &dyn StoreRead,
    catalog: &Catalog,
    raw: &str,
) -> Result<Resolution, MemoryError> {
    Ok(catalog.resolve(raw, None, &StoreLookup(store))?)
}

/// UTC now, as the original writes `created_at`.
pub fn now_utc() -> String {
    slayer_common::store::now_utc()
}

/// Whether an id is "int-shaped": digits only, no leading zero unless it is `0`.
pub fn is_int_shaped(id: &str) -> bool {
    !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) && (id == "0" || !id.starts_with('0'))
}

/// One more than the largest int-shaped id; `1` for none.
pub fn next_id<'a>(ids: impl IntoIterator<Item = &'a str>) -> String {
    let max = ids
        .into_iter()
        .filter(|id| is_int_shaped(id))
        .max_by(|a, b| a.len().cmp(&b.len()).then_with(|| a.cmp(b)));
    match max {
        None => "1".to_owned(),
        Some(m) => increment(m),
    }
}

fn increment(decimal: &str) -> String {
    let mut digits: Vec<u8> = decimal.bytes().map(|b| b - b'0').collect();
    let mut i = digits.len();
    loop {
        if i == 0 {
            digits.insert(0, 1);
            break;
        }
        i -= 1;
        if digits[i] == 9 {
            digits[i] = 0;
        } else {
            digits[i] += 1;
            break;
        }
    }
    digits.into_iter().map(|d| char::from(b'0' + d)).collect()
}

/// Hands out new ids inside one write transaction: the largest int-shaped id is read once (one
/// pass over the id index), then each allocation counts up, so an import of N id-less
/// records costs one pass, not N. A tier with an id prefix counts its own numbers
/// (`sem_1`, `sem_2`, …); lessons count plain ones.
#[derive(Debug)]
pub struct IdAllocator {
    prefix: Option<&'static str>,
    next: String,
}

impl IdAllocator {
    /// Lesson ids: starts after the store's largest int-shaped id and after every id in
    /// `reserved` (the explicit ids of the same batch, which must not be handed out again).
    pub fn new<'a>(
        store: &dyn StoreRead,
        reserved: impl IntoIterator<Item = &'a str>,
    ) -> Result<IdAllocator, MemoryError> {
        IdAllocator::for_tier(store, Tier::Lesson, reserved)
    }

    /// Ids of one tier: `<prefix>_<n>` past the store's and the batch's, or plain numbers for
    /// a tier without a prefix.
    pub fn for_tier<'a>(
        store: &dyn StoreRead,
        tier: Tier,
        reserved: impl IntoIterator<Item = &'a str>,
    ) -> Result<IdAllocator, MemoryError> {
        let prefix = tier.id_prefix();
        let max = match prefix {
            None => store.largest_int_id()?,
            Some(p) => store.largest_prefixed_id(p)?,
        };
        let after_store = next_id(max.as_deref());
        let numbers = reserved.into_iter().filter_map(|id| match prefix {
            None => Some(id),
            Some(p) => id.strip_prefix(p).and_then(|rest| rest.strip_prefix('_')),
        });
        let after_batch = next_id(numbers);
        Ok(IdAllocator {
            prefix,
            next: std::cmp::max_by(after_store, after_batch, |a, b| {
                a.len().cmp(&b.len()).then_with(|| a.cmp(b))
            }),
        })
    }

    /// The next free id.
    pub fn allocate(&mut self) -> String {
        let id = increment(&self.next);
        let number = std::mem::replace(&mut self.next, id);
        match self.prefix {
            None => number,
            Some(p) => format!("{p}_{number}"),
        }
    }
}

/// One allocator per tier, each opened on its first id (an import may mix tiers).
pub struct TierIds<'a> {
    store: &'a dyn StoreRead,
    reserved: Vec<String>,
    by_tier: std::collections::BTreeMap<Tier, IdAllocator>,
}

impl<'a> TierIds<'a> {
    /// Allocators past the store's ids and the batch's explicit `reserved` ones.
    pub fn new(store: &'a dyn StoreRead, reserved: Vec<String>) -> TierIds<'a> {
        TierIds {
            store,
            reserved,
            by_tier: Default::default(),
        }
    }

    /// The next free id of `tier`.
    pub fn allocate(&mut self, tier: Tier) -> Result<String, MemoryError> {
        if !self.by_tier.contains_key(&tier) {
            let reserved = self.reserved.iter().map(String::as_str);
            let ids = IdAllocator::for_tier(self.store, tier, reserved)?;
            self.by_tier.insert(tier, ids);
        }
        Ok(self
            .by_tier
            .get_mut(&tier)
            .map(IdAllocator::allocate)
            .unwrap_or_default())
    }
}

/// Checks a writer's tier, trust and owners, and the event time and session.
fn check_standing(standing: &Standing, occasion: &Occasion) -> Result<(), MemoryError> {
    standing
        .check()
        .and_then(|_| occasion.check())
        .map_err(|(_, message)| MemoryError::Input(format!("{message}.")))
}

fn clean_description(d: Option<String>) -> Result<Option<String>, MemoryError> {
    match d {
        Some(d) if d.trim().is_empty() => Ok(None),
        Some(d) => {
            let n = d.chars().count();
            if n > MAX_DESCRIPTION {
                return Err(MemoryError::Input(format!(
                    "description must be <= {MAX_DESCRIPTION} chars; got {n}."
                )));
            }
            Ok(Some(d))
        }
        None => Ok(None),
    }
}

fn push_unique(list: &mut Vec<String>, items: Vec<String>) {
    for item in items {
        if !list.contains(&item) {
            list.push(item);
        }
    }
}

/// Saves a memory: validates, resolves strictly, allocates or upserts, re-renders its doc.
/// Runs inside the caller's write transaction; nothing is written on an error.
pub fn save(store: &dyn StoreWrite, req: SaveRequest) -> Result<SaveOutcome, MemoryError> {
    if req.learning.trim().is_empty() {
        return Err(MemoryError::Invalid(
            "learning text must be a non-empty string.".into(),
        ));
    }
    if let Some(id) = &req.id {
        check_memory_id(id).map_err(|e| MemoryError::Invalid(e.to_string()))?;
    }
    let description = clean_description(req.description)?;
    check_standing(&req.standing, &req.occasion)?;
    let catalog = load_catalog(store)?;
    let lookup = StoreLookup(store);
    let mut entities = Vec::new();
    let mut warnings = Vec::new();
    match (&req.entities, &req.query) {
        (Some(list), None) => {
            if list.is_empty() {
                return Err(MemoryError::Invalid(
                    "linked_entities must be a non-empty list of entity references (or a SlayerQuery / dict).".into(),
                ));
            }
            for raw in list {
                let r = catalog.resolve(raw, None, &lookup)?;
                push_unique(&mut entities, r.canonical_forms);
                push_unique(&mut warnings, r.warnings);
            }
        }
        (None, Some(query)) => {
            let r = query_entities(query, &catalog, &lookup)?;
            entities = r.canonical_forms;
            warnings = r.warnings;
        }
        _ => {
            return Err(MemoryError::Invalid(
                "--entities or --query must be supplied (one or the other).".into(),
            ))
        }
    }
    let id = match req.id {
        Some(id) => id,
        None => IdAllocator::for_tier(store, req.standing.tier, [])?.allocate(),
    };
    let created_at = store
        .memory(&id)?
        .map(|m| m.created_at)
        .unwrap_or_else(now_utc);
    let memory = Memory {
        version: 4,
        id: id.clone(),
        learning: req.learning,
        description,
        entities: entities.clone(),
        query: req.query,
        created_at,
        standing: req.standing,
        occasion: req.occasion,
    };
    store.put_memory(&memory)?;
    refresh_memory_doc(store, &memory)?;
    Ok(SaveOutcome {
        memory_id: id,
        resolved_entities: entities,
        warnings,
        proposed: memory.standing.proposed,
    })
}

/// A field of an imported memory record that is not valid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field '{field}': {message}")]
pub struct FieldError {
    /// The field (`id`, `entities[2]`, …).
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl FieldError {
    fn new(field: impl Into<String>, message: impl std::fmt::Display) -> FieldError {
        FieldError {
            field: field.into(),
            message: message.to_string(),
        }
    }
}

/// Checks a memory record for import: the id, the learning, the description and the shape of
/// every tag. Tags are not resolved against the catalog, so an export imports into a fresh store.
pub fn check_record(memory: &mut Memory) -> Result<(), FieldError> {
    if !memory.id.is_empty() {
        check_memory_id(&memory.id).map_err(|m| FieldError::new("id", m.to_string()))?;
    }
    slayer_common::records::check_timestamp(&memory.created_at)
        .map_err(|m| FieldError::new("created_at", m.to_string()))?;
    if memory.learning.trim().is_empty() {
        return Err(FieldError::new(
            "learning",
            "learning must be a non-empty string.",
        ));
    }
    memory.description = clean_description(memory.description.take())
        .map_err(|e| FieldError::new("description", e))?;
    memory
        .standing
        .check()
        .and_then(|_| memory.occasion.check())
        .map_err(|(field, message)| FieldError::new(field, message))?;
    for (i, tag) in memory.entities.iter().enumerate() {
        let ok = match tag.strip_prefix(slayer_common::canonical::MEMORY_PREFIX) {
            Some(id) => check_memory_id(id).is_ok(),
            None => {
                let parts: Vec<&str> = tag.split('.').collect();
                parts.len() <= 3
                    && parts
                        .iter()
                        .all(|p| slayer_common::canonical::check_entity_name("tag", p).is_ok())
            }
        };
        if !ok {
            return Err(FieldError::new(
                format!("entities[{i}]"),
                format!("'{tag}' is not a canonical id (<ds>, <ds>.<model>, <ds>.<model>.<leaf> or memory:<id>)"),
            ));
        }
    }
    Ok(())
}

/// How an imported record landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ImportStatus {
    /// A new memory.
    Created,
    /// An existing id, now replaced (its `created_at` kept).
    Updated,
    /// An existing id with identical content.
    Unchanged,
}

/// Writes checked memory records in input order (allocating an id where one has none), as if
/// one at a time: a later record of an id replaces an earlier one, keeping the first stored
/// `created_at`. `stored` holds the stored memories the input names, read in one batch before
/// anything is written (a server's planner has no statistics of rows this transaction writes,
/// and a lookup of many ids among them would scan the table); the changed memories (and their
/// docs) are written [`IMPORT_CHUNK`] records at a time, so a server store pays a few round
/// trips per chunk, not several per memory.
/// Returns each record's id and status, and every memory as it now stands, by id.
pub fn import_batch(
    store: &dyn StoreWrite,
    ids: &mut TierIds<'_>,
    memories: Vec<Memory>,
    stored: HashMap<String, Memory>,
) -> Result<ImportedBatch, MemoryError> {
    // Their docs, read before anything is written too.
    let doc_ids: Vec<String> = stored
        .keys()
        .map(|id| slayer_common::canonical::memory_ref(id))
        .collect();
    let mut stored_docs: HashMap<String, StoredDoc> = store
        .docs(&doc_ids)?
        .into_iter()
        .map(|d| (d.doc.canonical_id.clone(), d))
        .collect();
    drop(doc_ids);
    let mut current = stored;
    let mut statuses = Vec::with_capacity(memories.len());
    let mut records = memories.into_iter().peekable();
    // Written a chunk at a time, so what is copied to be written (the memories, their docs)
    // stays bounded whatever the input's size.
    while records.peek().is_some() {
        let chunk: Vec<Memory> = records.by_ref().take(IMPORT_CHUNK).collect();
        let mut written: Vec<String> = Vec::new();
        for mut memory in chunk {
            if memory.id.is_empty() {
                memory.id = ids.allocate(memory.standing.tier)?;
            }
            let status = match current.get(&memory.id) {
                Some(old) => {
                    memory.created_at = old.created_at.clone();
                    if *old == memory {
                        statuses.push((memory.id, ImportStatus::Unchanged));
                        continue;
                    }
                    ImportStatus::Updated
                }
                None => ImportStatus::Created,
            };
            statuses.push((memory.id.clone(), status));
            written.push(memory.id.clone());
            current.insert(memory.id.clone(), memory);
        }
        let mut seen = HashSet::new();
        written.retain(|id| seen.insert(id.clone()));
        let to_write: Vec<Memory> = written.iter().map(|id| current[id].clone()).collect();
        store.put_memories(&to_write)?;
        refresh_memory_docs(store, &to_write, &mut stored_docs)?;
    }
    Ok(ImportedBatch {
        statuses,
        memories: current,
    })
}

/// Records [`import_batch`] reads and writes at a time.
const IMPORT_CHUNK: usize = 2000;

/// What [`import_batch`] wrote.
pub struct ImportedBatch {
    /// Each record's id and status, in input order.
    pub statuses: Vec<(String, ImportStatus)>,
    /// Every memory of the batch as it now stands in the store, by id.
    pub memories: HashMap<String, Memory>,
}

/// Re-renders the docs of `memories` and writes those whose text differs from `stored` (the
/// docs read before the import wrote any), in one batch.
fn refresh_memory_docs(
    store: &dyn StoreWrite,
    memories: &[Memory],
    stored: &mut HashMap<String, StoredDoc>,
) -> Result<(), MemoryError> {
    let changed: Vec<StoredDoc> = memories
        .iter()
        .map(slayer_index::render::memory_doc)
        .filter(|d| stored.remove(&d.doc.canonical_id).as_ref() != Some(d))
        .collect();
    store.upsert_docs(&changed)?;
    Ok(())
}

/// Tags that name nothing in the catalog (search hides them until they exist).
pub fn dangling_tags(
    store: &dyn StoreRead,
    catalog: &Catalog,
    memory: &Memory,
    batch: &HashMap<String, Memory>,
) -> Result<Vec<String>, MemoryError> {
    let lookup = StoreLookup(store);
    let mut dangling = Vec::new();
    for tag in &memory.entities {
        let exists = match tag.strip_prefix(slayer_common::canonical::MEMORY_PREFIX) {
            Some(id) if batch.contains_key(id) => true,
            Some(id) => lookup
                .memory_exists(id)
                .map_err(|e| MemoryError::Lookup(e.to_string()))?,
            None => catalog.contains(tag),
        };
        if !exists {
            dangling.push(tag.clone());
        }
    }
    Ok(dangling)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;

    #[test]
    fn the_allocator_counts_up_past_the_store_and_the_batch() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE memories (id TEXT PRIMARY KEY);
             INSERT INTO memories VALUES ('3'), ('x9'), ('010');",
        )
        .unwrap();
        let mut ids = IdAllocator::new(&conn, ["7", "kb"]).unwrap();
        assert_eq!([ids.allocate(), ids.allocate()], ["8", "9"]);
        assert_eq!(ids.allocate(), "10");
        let mut empty = IdAllocator::new(&conn, []).unwrap();
        assert_eq!(empty.allocate(), "4");
    }

    #[test]
    fn each_tier_counts_its_own_prefixed_ids() {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE memories (id TEXT PRIMARY KEY);
             INSERT INTO memories VALUES ('3'), ('sem_9'), ('sem_10'), ('sem_x'), ('sem_011'),
                 ('semantic_40'), ('proc_2'), ('sem'), ('sem_');",
        )
        .unwrap();
        let mut ids = TierIds::new(&conn, vec!["sem_12".into(), "crys_4".into()]);
        assert_eq!(ids.allocate(Tier::Semantic).unwrap(), "sem_13");
        assert_eq!(ids.allocate(Tier::Semantic).unwrap(), "sem_14");
        assert_eq!(ids.allocate(Tier::Procedural).unwrap(), "proc_3");
        assert_eq!(ids.allocate(Tier::Crystal).unwrap(), "crys_5");
        assert_eq!(ids.allocate(Tier::Facet).unwrap(), "fac_1");
        assert_eq!(ids.allocate(Tier::Observation).unwrap(), "obs_1");
        assert_eq!(ids.allocate(Tier::Lesson).unwrap(), "4");
        assert_eq!(Tier::of_allocated_id("sem_13"), Some(Tier::Semantic));
        assert_eq!(Tier::of_allocated_id("sem_x"), None);
        assert_eq!(Tier::of_allocated_id("13"), None);
    }

    #[test]
    fn the_allocator_counts_only_int_shaped_ids() {
        assert_eq!(next_id(["1", "5", "007", "42abc", "kb.x"]), "6");
        assert_eq!(next_id([]), "1");
        assert_eq!(next_id(["0"]), "1");
        assert_eq!(next_id(["9", "10"]), "11");
        assert_eq!(
            next_id(["99999999999999999999999"]),
            "100000000000000000000000"
        );
    }
}
