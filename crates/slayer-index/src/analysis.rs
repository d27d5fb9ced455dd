//! The analyzer of the full-text index (docs/spec/channels.md §6.1): how doc text and questions
//! become terms.
//!
//! Warehouse names are written in every convention (`customer_id`, `CustomerID`, `custId`,
//! `AvgScr2`), and a question spells them as words ("customer id"). So besides splitting on
//! every non-alphanumeric character, a run of letters and digits is split at case and
//! letter/digit boundaries, and the whole run is kept as well: `CDSCode` gives `cdscode`, `cds`,
//! `code`. Words that carry no meaning in a question about data ("the", "of", "which", "list")
//! are dropped on both sides, accents are folded (`café` matches `cafe`), and the English
//! Snowball stemmer joins `shipped`/`ship`.

use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, Stemmer, StopWordFilter,
    TextAnalyzer, Token, TokenStream, Tokenizer,
};
use tantivy::Index;

/// The analyzer's name in the index schema. A new name for a changed analyzer makes every old
/// index read as "another schema", which is rebuilt (docs/spec/channels.md §6.5). `v3`: the
/// analyzer of `v2`, with a `name` field that also holds an entity's synonyms (an index of `v2`
/// lacks them). `v4`: the `name` field holds the spelled-out abbreviations of the name and label
/// too ([`crate::abbreviations`]). `v5`: a `related` field holds a measure's plain words for its
/// name's jargon ([`crate::reporting_terms`]), and more abbreviations are spelled out.
pub const ANALYZER: &str = "slayer_en_v5";

/// Tokens of this many bytes or more are dropped (tantivy's `en_stem` limit).
const LONGEST_TOKEN: usize = 40;

/// Lucene's English stopwords (the list tantivy ships) plus the question and instruction words
/// an agent's question about data is made of. Words that name data are never here: `name`,
/// `number`, `count`, `date`, `id`, `total`, `first`, `last`, `top` all carry meaning in a
/// catalog.
pub const STOPWORDS: &[&str] = &[
    // Lucene's English list.
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with", // Question and instruction words.
    "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "do", "does", "did",
    "i", "me", "my", "we", "our", "us", "you", "your", "he", "she", "his", "her", "its", "them",
    "those", "am", "been", "being", "have", "has", "had", "from", "so", "can", "could", "would",
    "should", "may", "might", "must", "please", "list", "show", "give", "tell", "find", "also",
    "were", "any", "among", "many", "much",
];

/// Builds the analyzer.
pub fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(NameSplitter::default())
        .filter(RemoveLongFilter::limit(LONGEST_TOKEN))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter)
        .filter(StopWordFilter::remove(
            STOPWORDS.iter().map(|w| w.to_string()),
        ))
        .filter(Stemmer::new(Language::English))
        .build()
}

/// Registers the analyzer on an index; every open or create of an index calls this, since
/// tantivy keeps custom analyzers in memory only.
pub fn register(index: &Index) {
    index.tokenizers().register(ANALYZER, analyzer());
}

/// Splits on every non-alphanumeric character, then each run at case and letter/digit
/// boundaries; a run that splits is emitted whole first, then its parts.
#[derive(Clone, Default)]
pub struct NameSplitter {
    tokens: Vec<Token>,
}

/// The tokens of one text, computed up front (runs are short and a doc is small).
pub struct NameSplitterStream<'a> {
    tokens: &'a mut [Token],
    next: usize,
}

impl Tokenizer for NameSplitter {
    type TokenStream<'a> = NameSplitterStream<'a>;

    fn token_stream<'a>(&'a mut self, text: &'a str) -> NameSplitterStream<'a> {
        self.tokens.clear();
        let mut position = 0;
        let mut push = |tokens: &mut Vec<Token>, from: usize, to: usize| {
            tokens.push(Token {
                offset_from: from,
                offset_to: to,
                position,
                text: text[from..to].to_owned(),
                position_length: 1,
            });
            position += 1;
        };
        for (from, to) in alphanumeric_runs(text) {
            let cuts = name_cuts(&text[from..to]);
            push(&mut self.tokens, from, to);
            if cuts.is_empty() {
                continue;
            }
            let mut start = from;
            for cut in cuts.into_iter().map(|c| from + c).chain([to]) {
                push(&mut self.tokens, start, cut);
                start = cut;
            }
        }
        NameSplitterStream {
            tokens: &mut self.tokens,
            next: 0,
        }
    }
}

impl TokenStream for NameSplitterStream<'_> {
    fn advance(&mut self) -> bool {
        self.next += 1;
        self.next <= self.tokens.len()
    }

    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }

    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

/// Byte ranges of the maximal alphanumeric runs.
pub fn alphanumeric_runs(text: &str) -> Vec<(usize, usize)> {
    let mut runs = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(at),
            (false, Some(s)) => {
                runs.push((s, at));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        runs.push((s, text.len()));
    }
    runs
}

/// Byte offsets inside one run where a name part starts: `custId` → `cust|Id`, `CDSCode` →
/// `CDS|Code`, `k12` → `k|12`, `AvgScr2` → `Avg|Scr|2`. All-lowercase or all-caps words and
/// pure numbers do not split.
pub fn name_cuts(run: &str) -> Vec<usize> {
    let chars: Vec<(usize, char)> = run.char_indices().collect();
    let mut cuts = Vec::new();
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next = chars.get(i + 1).map(|(_, n)| *n);
        let lower_to_upper = prev.is_lowercase() && c.is_uppercase();
        let acronym_end =
            prev.is_uppercase() && c.is_uppercase() && next.is_some_and(|n| n.is_lowercase());
        let letter_digit =
            (prev.is_alphabetic() && c.is_numeric()) || (prev.is_numeric() && c.is_alphabetic());
        if lower_to_upper || acronym_end || letter_digit {
            cuts.push(at);
        }
    }
    cuts
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The analyzed terms of a text, in order.
    fn terms(text: &str) -> Vec<String> {
        let mut analyzer = analyzer();
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while let Some(token) = stream.next() {
            out.push(token.text.clone());
        }
        out
    }

    #[test]
    fn names_split_at_case_and_digit_boundaries_and_stay_whole_too() {
        assert_eq!(terms("CDSCode"), ["cdscode", "cds", "code"]);
        assert_eq!(terms("custId"), ["custid", "cust", "id"]);
        assert_eq!(terms("AvgScr2"), ["avgscr2", "avg", "scr", "2"]);
        assert_eq!(terms("k12"), ["k12", "k", "12"]);
        assert_eq!(terms("HTTPServer"), ["httpserver", "http", "server"]);
    }

    #[test]
    fn separators_split_and_plain_words_do_not() {
        assert_eq!(terms("customer_id"), ["custom", "id"]);
        assert_eq!(terms("order-items.v2"), ["order", "item", "v2", "v", "2"]);
        assert_eq!(terms("ORDERS orders 2024"), ["order", "order", "2024"]);
    }

    #[test]
    fn stopwords_go_accents_fold_and_stems_join() {
        assert_eq!(
            terms("List the names of the shipped orders, please"),
            ["name", "ship", "order"]
        );
        assert_eq!(terms("Café Zürich"), ["cafe", "zurich"]);
        assert_eq!(terms("Which customers"), ["custom"]);
    }

    #[test]
    fn long_tokens_are_dropped() {
        let long = "x".repeat(LONGEST_TOKEN);
        assert_eq!(terms(&format!("{long} short")), ["short"]);
    }
}
