//! How the planner reads text: the seed's normalisation (lower case, ASCII folding, camel and
//! snake split) for terms a person or an LLM wrote, and the index's own analyzer for what is
//! matched, so a planned term finds exactly the docs the index holds it in.

use tantivy::tokenizer::{AsciiFoldingFilter, LowerCaser, RawTokenizer, TextAnalyzer};

use slayer_index::analysis::{alphanumeric_runs, name_cuts};
use slayer_index::fulltext::FullText;

/// A term's words after the seed's normalisation: `PhoneNumber`, `phone_number` and
/// `Phone number` are all `["phone", "number"]`; `Café` is `["cafe"]`.
pub(crate) fn normalize(term: &str) -> Vec<String> {
    let mut fold = folder();
    let mut words = Vec::new();
    for (from, to) in alphanumeric_runs(term) {
        let run = &term[from..to];
        let mut start = 0;
        for cut in name_cuts(run).into_iter().chain([run.len()]) {
            words.push(fold_one(&mut fold, &run[start..cut]));
            start = cut;
        }
    }
    words
}

/// Lower case and ASCII folding of the whole text, punctuation kept (for charset checks).
pub(crate) fn folded(text: &str) -> String {
    fold_one(&mut folder(), text)
}

fn folder() -> TextAnalyzer {
    TextAnalyzer::builder(RawTokenizer::default())
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .build()
}

fn fold_one(fold: &mut TextAnalyzer, text: &str) -> String {
    let mut stream = fold.token_stream(text);
    let mut out = String::new();
    while let Some(token) = stream.next() {
        out.push_str(&token.text);
    }
    out
}

/// The index's analyzer (stopwords dropped, stems joined), with token positions.
pub(crate) struct IndexWords {
    analyzer: TextAnalyzer,
}

/// One analyzed token and its position in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Positioned {
    /// The index term.
    pub text: String,
    /// Its position (stopwords leave gaps, as in the index).
    pub position: usize,
}

impl IndexWords {
    /// The analyzer of the index's text field.
    pub(crate) fn of(fulltext: &FullText) -> IndexWords {
        let analyzer = fulltext
            .index()
            .tokenizer_for_field(fulltext.fields().text)
            .unwrap_or_else(|_| slayer_index::analysis::analyzer());
        IndexWords { analyzer }
    }

    /// The analyzer itself, without an index (tests).
    #[cfg(test)]
    pub(crate) fn standalone() -> IndexWords {
        IndexWords {
            analyzer: slayer_index::analysis::analyzer(),
        }
    }

    /// The index terms of a text, in order.
    pub(crate) fn terms(&mut self, text: &str) -> Vec<String> {
        self.positioned(text).into_iter().map(|t| t.text).collect()
    }

    /// The index terms of a text, each with the text it was read from.
    pub(crate) fn with_surface(&mut self, text: &str) -> Vec<(String, String)> {
        let mut stream = self.analyzer.token_stream(text);
        let mut out = Vec::new();
        while let Some(token) = stream.next() {
            let surface = text
                .get(token.offset_from..token.offset_to)
                .unwrap_or(&token.text)
                .to_owned();
            out.push((token.text.clone(), surface));
        }
        out
    }

    /// The index terms of a text with their positions.
    pub(crate) fn positioned(&mut self, text: &str) -> Vec<Positioned> {
        let mut stream = self.analyzer.token_stream(text);
        let mut out = Vec::new();
        while let Some(token) = stream.next() {
            out.push(Positioned {
                text: token.text.clone(),
                position: token.position,
            });
        }
        out
    }
}

/// Whether `needle` (a sequence of terms with relative positions) occurs in `hay` so that its
/// term number `anchor` lands on position `at`.
pub(crate) fn occurs_at(
    hay: &rustc_hash::FxHashMap<usize, &str>,
    needle: &[Positioned],
    anchor: usize,
    at: usize,
) -> bool {
    let base = needle[anchor].position;
    needle.iter().all(|t| {
        (at + t.position)
            .checked_sub(base)
            .and_then(|p| hay.get(&p))
            .is_some_and(|h| *h == t.text)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation_lowercases_folds_and_splits_camel_and_snake() {
        assert_eq!(normalize("PhoneNumber"), ["phone", "number"]);
        assert_eq!(normalize("phone_number"), ["phone", "number"]);
        assert_eq!(normalize("Phone  number"), ["phone", "number"]);
        assert_eq!(normalize("Café"), ["cafe"]);
        assert_eq!(normalize("CDSCode"), ["cds", "code"]);
        assert_eq!(normalize("a/b test"), ["a", "b", "test"]);
        assert_eq!(normalize("--"), Vec::<String>::new());
        assert_eq!(folded("Ça_va-Bien"), "ca_va-bien");
    }

    #[test]
    fn index_words_stem_and_drop_stopwords_keeping_positions() {
        let mut words = IndexWords::standalone();
        assert_eq!(words.terms("emails of the customers"), ["email", "custom"]);
        let p = words.positioned("a/b test");
        assert_eq!(
            p.iter().map(|t| t.text.as_str()).collect::<Vec<_>>(),
            ["b", "test"]
        );
        assert_eq!(p[1].position - p[0].position, 1);
    }

    #[test]
    fn a_phrase_occurs_where_its_terms_line_up() {
        let mut words = IndexWords::standalone();
        let hay_terms = words.positioned("we ran an ab test on sample size today");
        let hay: rustc_hash::FxHashMap<usize, &str> = hay_terms
            .iter()
            .map(|t| (t.position, t.text.as_str()))
            .collect();
        let test_at = hay_terms
            .iter()
            .find(|t| t.text == "test")
            .unwrap()
            .position;
        let ab_test = words.positioned("ab test");
        assert!(occurs_at(&hay, &ab_test, 1, test_at));
        let t_test = words.positioned("t-test");
        assert!(!occurs_at(&hay, &t_test, 1, test_at));
    }
}
