//! How two models of one datasource join (docs/spec/fusion.md §8.8): the column pairs a join
//! between them would use. Read by model-level evidence (the connecting keys of the models taking
//! part) and by the schema answer (its join paths).
//!
//! A catalog that declares its joins is read as declared. Most warehouses declare few, so the
//! naming conventions schemas join by are read as well:
//! - a **reference by name**: a column of one model that names the other model and one of its
//!   keys (`orders.customer_id` → `customers.id`, `posts.owneruserid` → `users.id`,
//!   `cards.setcode` → `sets.code`, `budget.link_to_event` → `event.event_id`,
//!   `match.home_team_api_id` → `team.team_api_id`, `hero_power.power_id` → `superpower.id`);
//! - a **shared name**: both models have a column of the same name that reads as a key (an
//!   `id`, a `key`, a `code`) or is either side's primary key (`frpm.cdscode` =
//!   `schools.cdscode`). A bare `id` on both sides is each table's own surrogate key where the
//!   schema names its references (`<table>_id`), so it joins only where neither model takes
//!   part in such a reference.
//!
//! The surest kind of pair found for two models decides how they join: declared pairs where
//! the catalog declares any between them, else references by name, else shared names. A
//! shared key-like name beside a reference is two keys of the same kind, not the join
//! (`cards.mcmid` and `sets.mcmid` are each table's own marketplace id; the cards of a set
//! are `cards.setcode` = `sets.code`).

use std::cell::RefCell;
use std::rc::Rc;

use rustc_hash::FxHashMap;
use serde::Serialize;
use slayer_common::records::skeleton::{Column, Model};
use slayer_memory::resolve::Catalog;

/// How a join pair was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum JoinHow {
    /// A join the catalog declares.
    Declared,
    /// A column that names the other model and its key.
    Reference,
    /// The same key-like column name on both sides.
    SameName,
}

/// One pair of columns a join uses: `from` = `to`, as canonical column ids.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct JoinPair {
    /// The referencing column (for a shared name, the first model's).
    pub from: String,
    /// The column it joins to.
    pub to: String,
    /// How the pair was found.
    pub how: JoinHow,
}

/// What a [`Joins`] has worked out about one catalog, kept by the corpus for as long as the
/// catalog it was read from: a long-lived search asks for the same few pairs again and again.
#[derive(Default)]
pub(crate) struct JoinMemo {
    /// Whether a model (`ds.model`) takes part in a reference by name.
    references: RefCell<FxHashMap<String, bool>>,
    /// Each datasource's visible models with their bare names.
    bare_names: RefCell<FxHashMap<String, Rc<Vec<BareModel>>>>,
    /// The pairs of two models, by their ids in the order asked.
    pairs: RefCell<FxHashMap<ModelPair, Rc<[JoinPair]>>>,
}

/// Two model ids, in the order asked.
type ModelPair = (String, String);

/// The most model pairs a memo keeps; past it, it starts again (a request asks for a few
/// dozen, so only a process answering questions over thousands of models ever gets there).
const MEMO_PAIRS: usize = 16_384;

/// Finds join pairs in one catalog, remembering what it read in its own memo or the corpus's.
pub(crate) struct Joins<'c> {
    catalog: &'c Catalog,
    memo: &'c JoinMemo,
}

/// A model's names as a reference by name reads them, computed once per datasource.
struct BareModel {
    /// Its place in the catalog's models.
    index: usize,
    /// The last (at most) four letters of each stem: every rule of [`referenced_key`] needs
    /// the referencing column's bare name to hold one of them.
    tails: Vec<String>,
    /// The bare names of its visible columns.
    columns: Vec<String>,
}

impl BareModel {
    fn new(index: usize, model: &Model) -> BareModel {
        let tails = stems(&model.name)
            .into_iter()
            .map(|s| {
                let from = s.char_indices().rev().nth(3).map_or(0, |(at, _)| at);
                s[from..].to_owned()
            })
            .collect();
        let columns = model
            .columns
            .iter()
            .filter(|c| !c.hidden)
            .map(|c| bare(&c.name))
            .collect();
        BareModel {
            index,
            tails,
            columns,
        }
    }

    /// Whether a column of this model could reference `to` (a cheap necessary condition).
    fn may_reference(&self, to: &BareModel) -> bool {
        self.columns
            .iter()
            .any(|c| to.tails.iter().any(|t| c.contains(t.as_str())))
    }
}

impl<'c> Joins<'c> {
    /// A finder over this catalog that remembers in `memo`, which must have been filled only
    /// from this catalog.
    pub(crate) fn new(catalog: &'c Catalog, memo: &'c JoinMemo) -> Joins<'c> {
        Joins { catalog, memo }
    }

    /// The join pairs between models `a` and `b` (`ds.model`, one datasource): declared pairs
    /// of either model's joins; where there are none, references by name; where there are
    /// none either, shared names.
    pub(crate) fn pairs(&self, a: &str, b: &str) -> Vec<JoinPair> {
        let key = (a.to_owned(), b.to_owned());
        if let Some(pairs) = self.memo.pairs.borrow().get(&key) {
            return pairs.to_vec();
        }
        let pairs = self.find_pairs(a, b);
        let mut memo = self.memo.pairs.borrow_mut();
        if memo.len() >= MEMO_PAIRS {
            memo.clear();
        }
        memo.insert(key, pairs.clone().into());
        pairs
    }

    fn find_pairs(&self, a: &str, b: &str) -> Vec<JoinPair> {
        let (Some(ma), Some(mb)) = (self.model(a), self.model(b)) else {
            return Vec::new();
        };
        if ma.data_source != mb.data_source || a == b {
            return Vec::new();
        }
        let mut pairs: Vec<JoinPair> = Vec::new();
        let push = |pairs: &mut Vec<JoinPair>, from: String, to: String, how: JoinHow| {
            let seen = pairs
                .iter()
                .any(|p| (p.from == from && p.to == to) || (p.from == to && p.to == from));
            if !seen {
                pairs.push(JoinPair { from, to, how });
            }
        };
        for (from, to, from_id, to_id) in [(ma, mb, a, b), (mb, ma, b, a)] {
            for join in from.joins.iter().filter(|j| j.target_model == to.name) {
                for (x, y) in &join.join_pairs {
                    if visible(from, x).is_some() && visible(to, y).is_some() {
                        push(
                            &mut pairs,
                            format!("{from_id}.{x}"),
                            format!("{to_id}.{y}"),
                            JoinHow::Declared,
                        );
                    }
                }
            }
        }
        if !pairs.is_empty() {
            return pairs;
        }
        for (from, to, from_id, to_id) in [(ma, mb, a, b), (mb, ma, b, a)] {
            for (column, key) in references(from, to) {
                push(
                    &mut pairs,
                    format!("{from_id}.{}", column.name),
                    format!("{to_id}.{}", key.name),
                    JoinHow::Reference,
                );
            }
        }
        if !pairs.is_empty() {
            return pairs;
        }
        for column in ma.columns.iter().filter(|c| !c.hidden) {
            let Some(other) = visible(mb, &column.name) else {
                continue;
            };
            let key = column.primary_key || other.primary_key || reads_as_key(&column.name);
            if !key {
                continue;
            }
            if bare(&column.name) == "id"
                && !(column.primary_key && other.primary_key)
                && (self.in_reference(ma) || self.in_reference(mb))
            {
                continue;
            }
            push(
                &mut pairs,
                format!("{a}.{}", column.name),
                format!("{b}.{}", column.name),
                JoinHow::SameName,
            );
        }
        pairs
    }

    /// The key columns connecting `a` and `b`, both sides, in the order of their pairs.
    pub(crate) fn keys(&self, a: &str, b: &str) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        for pair in self.pairs(a, b) {
            for id in [pair.from, pair.to] {
                if !keys.contains(&id) {
                    keys.push(id);
                }
            }
        }
        keys
    }

    fn model(&self, id: &str) -> Option<&'c Model> {
        visible_model(self.catalog, id)
    }

    /// Whether the model references, or is referenced by, another model of its datasource by
    /// name: then its bare `id` is its own surrogate key. Only the models whose names pass
    /// [`BareModel::may_reference`] are read rule by rule, so a datasource of thousands of
    /// models costs one pass over its column names.
    fn in_reference(&self, model: &Model) -> bool {
        let id = model.canonical_id();
        if let Some(known) = self.memo.references.borrow().get(&id) {
            return *known;
        }
        let models = self.datasource(&model.data_source);
        let of = |m: &BareModel| &self.catalog.models[m.index];
        let found = match models.iter().find(|m| of(m).name == model.name) {
            Some(this) => models
                .iter()
                .filter(|m| of(m).name != model.name)
                .any(|other| {
                    (this.may_reference(other) && references(model, of(other)).next().is_some())
                        || (other.may_reference(this)
                            && references(of(other), model).next().is_some())
                }),
            None => false,
        };
        self.memo.references.borrow_mut().insert(id, found);
        found
    }

    /// The visible models of a datasource with their bare names, read once.
    fn datasource(&self, ds: &str) -> Rc<Vec<BareModel>> {
        if let Some(models) = self.memo.bare_names.borrow().get(ds) {
            return models.clone();
        }
        let start = self
            .catalog
            .models
            .partition_point(|m| m.data_source.as_str() < ds);
        let models: Rc<Vec<BareModel>> = Rc::new(
            self.catalog.models[start..]
                .iter()
                .enumerate()
                .take_while(|(_, m)| m.data_source == ds)
                .filter(|(_, m)| !m.hidden)
                .map(|(i, m)| BareModel::new(start + i, m))
                .collect(),
        );
        self.memo
            .bare_names
            .borrow_mut()
            .insert(ds.to_owned(), models.clone());
        models
    }
}

/// The visible model of a `ds.model` id.
pub(crate) fn visible_model<'c>(catalog: &'c Catalog, id: &str) -> Option<&'c Model> {
    let (ds, name) = id.split_once('.')?;
    catalog.model_in(ds, name).filter(|m| !m.hidden)
}

/// A visible column of the model by name.
fn visible<'m>(model: &'m Model, name: &str) -> Option<&'m Column> {
    model.columns.iter().find(|c| !c.hidden && c.name == name)
}

/// The columns of `from` that reference a key of `to` by name, with that key (a column of the
/// same name is a shared name, not a reference).
fn references<'m>(
    from: &'m Model,
    to: &'m Model,
) -> impl Iterator<Item = (&'m Column, &'m Column)> {
    let target = Target::of(to);
    from.columns
        .iter()
        .filter(|c| !c.hidden)
        .filter_map(move |c| {
            referenced_key(&c.name, &target)
                .filter(|k| k.name != c.name)
                .map(|k| (c, k))
        })
}

/// A model as references to it are read: its stems and its visible columns' bare names (each
/// read once per pair of models, not once per column asking).
struct Target<'m> {
    stems: Vec<String>,
    /// Visible columns, their bare names, and whether each reads as a key.
    keys: Vec<(&'m Column, String, bool)>,
}

impl<'m> Target<'m> {
    fn of(to: &'m Model) -> Target<'m> {
        Target {
            stems: stems(&to.name),
            keys: to
                .columns
                .iter()
                .filter(|k| !k.hidden)
                .map(|k| {
                    let bk = bare(&k.name);
                    let key = KEY_ENDS.iter().any(|end| bk.ends_with(end));
                    (k, bk, key)
                })
                .collect(),
        }
    }
}

/// The key of `to` a column named `column` references, if its name says so.
fn referenced_key<'m>(column: &str, to: &Target<'m>) -> Option<&'m Column> {
    let bc = bare(column);
    for stem in &to.stems {
        // `customer_id` -> customers.id or customers.customer_id.
        for end in KEY_ENDS {
            if bc.ends_with(end) && bc[..bc.len() - end.len()].ends_with(stem.as_str()) {
                let own = format!("{stem}{end}");
                if let Some((k, _, _)) = to.keys.iter().find(|(_, bk, _)| bk == end || *bk == own) {
                    return Some(k);
                }
            }
        }
        // The key spelled with the model's name: `home_team_api_id` -> team.team_api_id, and
        // `link_to_event` -> event.event_id.
        for (k, bk, key) in &to.keys {
            if !key || !bk.starts_with(stem.as_str()) || *bk == bc {
                continue;
            }
            let own = KEY_ENDS
                .iter()
                .any(|end| bk.len() == stem.len() + end.len() && bk.ends_with(end));
            if bc.ends_with(bk.as_str()) || (own && bc.ends_with(stem.as_str()) && bc != *stem) {
                return Some(k);
            }
        }
    }
    // `power_id` -> superpower.id: the word before the key ends the model's name.
    let words = words(column);
    if let [.., word, end] = words.as_slice() {
        if word.len() >= 4
            && KEY_ENDS.contains(&end.as_str())
            && to.stems.iter().any(|s| s.ends_with(word.as_str()))
        {
            return to
                .keys
                .iter()
                .find(|(_, bk, _)| bk == end)
                .map(|(k, _, _)| *k);
        }
    }
    None
}

/// The endings of a key column's name.
const KEY_ENDS: [&str; 3] = ["id", "key", "code"];

/// Lowercase letters and digits only: `Customer ID` -> `customerid`.
fn bare(name: &str) -> String {
    name.chars()
        .filter(|c| c.is_alphanumeric())
        .flat_map(char::to_lowercase)
        .collect()
}

/// The lowercase words of a name (`eye_colour_id` -> eye, colour, id).
fn words(name: &str) -> Vec<String> {
    name.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// A model name's bare form and its singular (`categories` -> category, `sets` -> set,
/// `matches` -> match).
fn stems(name: &str) -> Vec<String> {
    let b = bare(name);
    let mut out = vec![b.clone()];
    if let Some(head) = b.strip_suffix("ies") {
        out.push(format!("{head}y"));
    } else if let Some(head) = b.strip_suffix("es") {
        out.push(format!("{head}e"));
        out.push(head.to_owned());
    } else if let Some(head) = b.strip_suffix('s') {
        out.push(head.to_owned());
    }
    out.retain(|s| !s.is_empty());
    out
}

/// Whether a column name reads as a key: `id`, or ending in `id`, `key` or `code` once its
/// separators are dropped (`customer_id`, `CustomerID`, `order key`, `country_code`).
pub(crate) fn reads_as_key(name: &str) -> bool {
    let b = bare(name);
    KEY_ENDS.iter().any(|end| b.ends_with(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(ds: &str, name: &str, columns: &[&str]) -> Model {
        let columns: Vec<serde_json::Value> = columns
            .iter()
            .map(|c| serde_json::json!({ "name": c }))
            .collect();
        serde_json::from_value(serde_json::json!({
            "name": name, "data_source": ds, "columns": columns
        }))
        .unwrap()
    }

    fn catalog(models: Vec<Model>) -> Catalog {
        let mut models = models;
        models.sort_by(|a, b| (&a.data_source, &a.name).cmp(&(&b.data_source, &b.name)));
        Catalog {
            datasources: models.iter().map(|m| m.data_source.clone()).collect(),
            models,
        }
    }

    fn pairs(joins: &Joins<'_>, a: &str, b: &str) -> Vec<(String, String, JoinHow)> {
        joins
            .pairs(a, b)
            .into_iter()
            .map(|p| (p.from, p.to, p.how))
            .collect()
    }

    fn pair(from: &str, to: &str, how: JoinHow) -> (String, String, JoinHow) {
        (from.to_owned(), to.to_owned(), how)
    }

    #[test]
    fn shared_names_that_read_as_keys_connect_two_models() {
        let c = catalog(vec![
            model(
                "db",
                "orders",
                &["id", "customer_id", "name", "Country Code"],
            ),
            model("db", "customers", &["customer_id", "name", "Country Code"]),
            model("db", "notes", &["text"]),
        ]);
        let memo = JoinMemo::default();
        let joins = Joins::new(&c, &memo);
        assert_eq!(
            joins.keys("db.orders", "db.customers"),
            [
                "db.orders.customer_id",
                "db.customers.customer_id",
                "db.orders.Country Code",
                "db.customers.Country Code"
            ]
        );
        assert!(joins.keys("db.orders", "db.notes").is_empty());
        assert!(joins.keys("db.orders", "db.nope").is_empty());
        for (name, key) in [
            ("id", true),
            ("CustomerID", true),
            ("order key", true),
            ("cdscode", true),
            ("identity", false),
            ("name", false),
        ] {
            assert_eq!(reads_as_key(name), key, "{name}");
        }
    }

    /// A memo shared by two finders answers the second from what the first read, the same
    /// pairs in the same order; past its bound it starts again and still answers right.
    #[test]
    fn a_shared_memo_answers_again_with_the_same_pairs() {
        let c = catalog(vec![
            model("db", "orders", &["id", "customer_id"]),
            model("db", "customers", &["id", "name"]),
            model("db", "patient", &["id", "sex"]),
            model("db", "laboratory", &["id", "date"]),
        ]);
        let memo = JoinMemo::default();
        let first = Joins::new(&c, &memo).pairs("db.orders", "db.customers");
        assert_eq!(memo.pairs.borrow().len(), 1);
        let again = Joins::new(&c, &memo).pairs("db.orders", "db.customers");
        assert_eq!(first, again);
        assert_eq!(first[0].from, "db.orders.customer_id");
        // A shared bare `id` needs to know who takes part in a reference: remembered.
        let ids = Joins::new(&c, &memo).pairs("db.patient", "db.laboratory");
        assert_eq!(ids[0].from, "db.patient.id");
        assert!(!memo.references.borrow().is_empty());
        memo.pairs.borrow_mut().clear();
        for i in 0..MEMO_PAIRS {
            memo.pairs
                .borrow_mut()
                .insert((format!("x{i}"), String::new()), Rc::from(Vec::new()));
        }
        let after = Joins::new(&c, &memo).pairs("db.customers", "db.orders");
        assert_eq!(memo.pairs.borrow().len(), 1);
        assert_eq!(after[0].from, "db.orders.customer_id");
    }

    /// Declared from either side, and then the only pairs: the shared primary key `serial`
    /// would have joined the two without the declaration.
    #[test]
    fn declared_pairs_are_read_from_either_side_and_decide_alone() {
        let notes: Model = serde_json::from_value(serde_json::json!({
            "name": "notes", "data_source": "db",
            "columns": [{"name": "text"}, {"name": "order_ref"}, {"name": "serial", "primary_key": true}],
            "joins": [{"target_model": "orders", "join_pairs": [["order_ref", "id"], ["gone", "id"]]}]
        }))
        .unwrap();
        let c = catalog(vec![model("db", "orders", &["id", "serial"]), notes]);
        let memo = JoinMemo::default();
        let joins = Joins::new(&c, &memo);
        assert_eq!(
            pairs(&joins, "db.orders", "db.notes"),
            [pair(
                "db.notes.order_ref",
                "db.orders.id",
                JoinHow::Declared
            )]
        );
        let undeclared_notes: Model = serde_json::from_value(serde_json::json!({
            "name": "notes", "data_source": "db",
            "columns": [{"name": "text"}, {"name": "serial", "primary_key": true}]
        }))
        .unwrap();
        let undeclared = catalog(vec![
            model("db", "orders", &["id", "serial"]),
            undeclared_notes,
        ]);
        assert_eq!(
            pairs(
                &Joins::new(&undeclared, &JoinMemo::default()),
                "db.orders",
                "db.notes"
            ),
            [pair(
                "db.orders.serial",
                "db.notes.serial",
                JoinHow::SameName
            )]
        );
    }

    #[test]
    fn a_column_naming_another_model_and_its_key_references_it() {
        let c = catalog(vec![
            model("db", "users", &["id", "name"]),
            model(
                "db",
                "posts",
                &["id", "owneruserid", "lasteditoruserid", "score"],
            ),
            model("db", "sets", &["id", "code", "mcmid"]),
            model("db", "cards", &["id", "setcode", "upvotes", "mcmid"]),
            model("db", "event", &["event_id", "name"]),
            model("db", "budget", &["budget_id", "link_to_event"]),
            model("db", "superpower", &["id", "power_name"]),
            model("db", "hero_power", &["hero_id", "power_id"]),
            model("db", "team", &["id", "team_api_id"]),
            model(
                "db",
                "match",
                &["id", "home_team_api_id", "away_team_api_id"],
            ),
            model("db", "categories", &["id"]),
            model("db", "items", &["category_id"]),
            model("db", "votes", &["id"]),
        ]);
        let memo = JoinMemo::default();
        let joins = Joins::new(&c, &memo);
        let reference = JoinHow::Reference;
        assert_eq!(
            pairs(&joins, "db.users", "db.posts"),
            [
                pair("db.posts.owneruserid", "db.users.id", reference),
                pair("db.posts.lasteditoruserid", "db.users.id", reference),
            ]
        );
        // Both have an `mcmid`, each its own key: the reference is the join.
        assert_eq!(
            pairs(&joins, "db.cards", "db.sets"),
            [pair("db.cards.setcode", "db.sets.code", reference)]
        );
        assert_eq!(
            pairs(&joins, "db.budget", "db.event"),
            [pair(
                "db.budget.link_to_event",
                "db.event.event_id",
                reference
            )]
        );
        assert_eq!(
            pairs(&joins, "db.hero_power", "db.superpower"),
            [pair(
                "db.hero_power.power_id",
                "db.superpower.id",
                reference
            )]
        );
        assert_eq!(
            pairs(&joins, "db.match", "db.team"),
            [
                pair(
                    "db.match.home_team_api_id",
                    "db.team.team_api_id",
                    reference
                ),
                pair(
                    "db.match.away_team_api_id",
                    "db.team.team_api_id",
                    reference
                ),
            ]
        );
        assert_eq!(
            pairs(&joins, "db.items", "db.categories"),
            [pair("db.items.category_id", "db.categories.id", reference)]
        );
        // A count that ends in a model's name is no reference; nor is a name alone.
        assert!(pairs(&joins, "db.cards", "db.votes").is_empty());
        assert!(pairs(&joins, "db.event", "db.budget")
            .iter()
            .all(|p| p.0 != "db.event.name"));
    }

    #[test]
    fn a_shared_bare_id_joins_only_where_no_reference_says_it_is_a_surrogate() {
        // Every table's own `id`, and references by name: ids never join each other.
        let surrogate = catalog(vec![
            model("db", "gender", &["id", "gender"]),
            model("db", "race", &["id", "race"]),
            model("db", "hero", &["id", "gender_id", "race_id"]),
        ]);
        let memo = JoinMemo::default();
        let joins = Joins::new(&surrogate, &memo);
        assert!(pairs(&joins, "db.gender", "db.race").is_empty());
        assert_eq!(
            pairs(&joins, "db.hero", "db.race"),
            [pair("db.hero.race_id", "db.race.id", JoinHow::Reference)]
        );
        // No reference anywhere: the shared `id` is the one key the tables share.
        let shared = catalog(vec![
            model("db", "patient", &["id", "sex"]),
            model("db", "laboratory", &["id", "date", "got"]),
        ]);
        assert_eq!(
            pairs(
                &Joins::new(&shared, &JoinMemo::default()),
                "db.laboratory",
                "db.patient"
            ),
            [pair("db.laboratory.id", "db.patient.id", JoinHow::SameName)]
        );
        // Other datasources never join.
        let two = catalog(vec![
            model("a", "patient", &["id"]),
            model("b", "patient_visit", &["patient_id"]),
        ]);
        assert!(pairs(
            &Joins::new(&two, &JoinMemo::default()),
            "a.patient",
            "b.patient_visit"
        )
        .is_empty());
    }

    #[test]
    fn stems_are_the_name_and_its_singular() {
        assert_eq!(stems("Categories"), ["categories", "category"]);
        assert_eq!(stems("sets"), ["sets", "set"]);
        assert_eq!(stems("matches"), ["matches", "matche", "match"]);
        assert_eq!(stems("event"), ["event"]);
    }
}
