//! Classify and expand (docs/spec/planner.md §15.2): a navigational question, the caller's terms,
//! the LLM's (cached in the store), the question's own words and negations, the configured soft
//! terms.

use slayer_common::records::content_hash;
use slayer_common::store::StoreWrite;
use slayer_common::store::{OpenMode, Store};

use super::{Expansion, Run};
use crate::corpus::{Corpus, Scope};
use crate::plan::explain::LlmReport;
use crate::plan::gate::{Proposed, Role, Source};
use crate::plan::llm;
use crate::plan::prf::split_negations;
use crate::plan::terms::{Exception, Injected};
use crate::SearchError;

impl Run<'_, '_, '_, '_> {
    /// Expansion (docs/spec/planner.md §15.2): the caller's terms, the LLM's, the question's own
    /// words and negations, the configured soft terms, in merge order.
    pub(super) fn expand(&mut self) -> Result<Expansion, SearchError> {
        let config = self.config;
        let question = self.ask.question;
        let mut proposals: Vec<Proposed> = Vec::new();
        let mut exceptions: Vec<Exception> = Vec::new();
        let mut push = |terms: &Injected, source: Source, proposals: &mut Vec<Proposed>| {
            let roles = [
                (&terms.anchors, Role::Anchor),
                (&terms.phrases, Role::Phrase),
                (&terms.synonyms, Role::Synonym),
                (&terms.negatives.hard, Role::HardNegative),
                (&terms.negatives.soft, Role::SoftNegative),
            ];
            for (list, role) in roles {
                proposals.extend(list.iter().map(|t| Proposed {
                    text: t.clone(),
                    role,
                    source,
                }));
            }
            exceptions.extend(terms.all_exceptions().cloned());
        };
        if let Some(injected) = self.ask.injected.filter(|i| !i.is_empty()) {
            push(injected, Source::Caller, &mut proposals);
            self.explain.sources.push(Source::Caller);
        }
        if let Some(answer) = self.llm_terms()? {
            push(&answer, Source::Llm, &mut proposals);
            self.explain.sources.push(Source::Llm);
        }
        let expanded = !self.explain.sources.is_empty();
        let (wanted, negated) = split_negations(question, &mut self.words);
        if !proposals
            .iter()
            .any(|p| matches!(p.role, Role::Anchor | Role::Phrase))
        {
            proposals.extend(wanted.into_iter().map(|w| Proposed {
                text: w,
                role: Role::Anchor,
                source: Source::Query,
            }));
            self.explain.sources.push(Source::Query);
        }
        proposals.extend(negated.into_iter().map(|w| Proposed {
            text: w,
            role: Role::SoftNegative,
            source: Source::Query,
        }));
        proposals.extend(config.negatives.soft_terms.iter().map(|w| Proposed {
            text: w.clone(),
            role: Role::SoftNegative,
            source: Source::Config,
        }));
        Ok(Expansion {
            proposals,
            exceptions,
            expanded,
        })
    }

    /// The LLM's terms: from the store's cache, or asked and cached. `None` when no LLM is
    /// configured or it failed (a warning).
    pub(super) fn llm_terms(&mut self) -> Result<Option<Injected>, SearchError> {
        let sources = self.sources;
        let question = self.ask.question;
        let settings = match &sources.planner.llm {
            Ok(None) => return Ok(None),
            Ok(Some(s)) => s,
            Err(why) => {
                self.warnings.push(why.to_string());
                return Ok(None);
            }
        };
        let datasources: Vec<String> = sources.corpus.datasources.iter().cloned().collect();
        let key = format!(
            "planner.llm:{}:{}",
            settings.model,
            content_hash(&format!("{question}\u{0}{}", datasources.join("\u{0}")))
        );
        let mut report = LlmReport {
            model: settings.model.clone(),
            cached: false,
            failed: false,
        };
        if let Some(cached) = sources.conn.setting(&key)? {
            if let Ok(terms) = serde_json::from_str::<Injected>(&cached) {
                report.cached = true;
                self.explain.llm = Some(report);
                return Ok(Some(terms));
            }
        }
        let stoplist = &self.config.stoplist;
        let answer = match llm::expand(settings, question, &datasources, stoplist) {
            Ok(answer) => answer,
            Err(why) => {
                self.warnings.push(why.to_string());
                report.failed = true;
                self.explain.llm = Some(report);
                return Ok(None);
            }
        };
        for w in answer.warnings {
            self.warnings.push(w);
        }
        // A read-only store is searched all the same; the answer is then asked again next time.
        if let (Ok(mut store), Ok(text)) = (
            Store::open(sources.text.store(), OpenMode::MustExist),
            serde_json::to_string(&answer.terms),
        ) {
            if let Ok(tx) = store.write() {
                if tx.set_setting(&key, &text).is_ok() {
                    let _ = tx.commit();
                }
            }
        }
        self.explain.llm = Some(report);
        Ok(Some(answer.terms))
    }
}

/// A question that is an entity's name or dotted path (no spaces; quotes and a trailing
/// `?` aside) and resolves to exactly one entity under the datasource.
pub(super) fn navigational(
    corpus: &Corpus<'_>,
    question: &str,
    scope: &Scope<'_, '_>,
) -> Result<Option<String>, SearchError> {
    let Some(name) = crate::inputs::bare_name(question) else {
        return Ok(None);
    };
    let catalog = corpus.catalog()?;
    let lookup: &dyn slayer_memory::resolve::Lookup = corpus;
    let Ok(resolution) = catalog.resolve(&name, None, lookup) else {
        return Ok(None);
    };
    Ok(match resolution.canonical_forms.as_slice() {
        [one] if !one.starts_with("memory:") && scope.keeps_doc(one)? => Some(one.clone()),
        _ => None,
    })
}
