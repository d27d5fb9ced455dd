//! BERT's uncased WordPiece tokenizer, exactly as a `tokenizer.json` of that shape describes it
//! (BertNormalizer, BertPreTokenizer, WordPiece, `[CLS] $A [SEP]`), loaded in a few
//! milliseconds: the `tokenizers` crate builds its whole general pipeline (added-token
//! automata, serde of every component) for each process, which costs a one-shot search more
//! than the rest of its question embedding. A file of any other shape is refused, and the
//! caller uses `tokenizers`. Tests check the ids against `tokenizers` on many texts.

use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Value};
use slayer_common::hash_index::{Found, HashIndex};
use unicode_categories::UnicodeCategories;
use unicode_normalization::UnicodeNormalization;

/// The tokenizer.
pub struct WordPiece {
    vocab: Vocab,
    /// Added tokens (`[CLS]`, `[SEP]`, …): matched in the raw text, never normalized.
    added: Vec<(String, u32)>,
    unk: u32,
    cls: u32,
    sep: u32,
    prefix: String,
    max_word_chars: usize,
}

#[derive(Deserialize)]
struct File {
    added_tokens: Vec<Added>,
    normalizer: Value,
    pre_tokenizer: Value,
    post_processor: Value,
    model: Model,
}

#[derive(Deserialize)]
struct Added {
    id: u32,
    content: String,
    single_word: bool,
    lstrip: bool,
    rstrip: bool,
    normalized: bool,
}

#[derive(Deserialize)]
struct Model {
    #[serde(rename = "type")]
    kind: String,
    unk_token: String,
    continuing_subword_prefix: String,
    max_input_chars_per_word: usize,
    vocab: Vocab,
}

/// The vocabulary: every token in one string, found by hash. Read as a map of 30,000 owned
/// strings it took a one-shot search 3 ms, more than the rest of the tokenizer's load.
#[derive(Debug, Default)]
struct Vocab {
    /// The tokens, one after another.
    pool: String,
    /// Each token's end in `pool` (its start is the previous one's end) and id, in file order.
    tokens: Vec<(u32, u32)>,
    index: Option<HashIndex>,
}

impl Vocab {
    fn token(&self, at: usize) -> &str {
        let start = at.checked_sub(1).map_or(0, |p| self.tokens[p].0 as usize);
        &self.pool[start..self.tokens[at].0 as usize]
    }

    fn get(&self, token: &str) -> Option<u32> {
        let index = self.index.as_ref()?;
        let at = match index.find(token.as_bytes(), |at| self.token(at as usize) == token) {
            Found::At(at) => at as usize,
            Found::Absent => return None,
            // A token the file lists twice: the last one, as a map read from it keeps.
            Found::Search => (0..self.tokens.len())
                .rev()
                .find(|&at| self.token(at) == token)?,
        };
        Some(self.tokens[at].1)
    }
}

impl<'de> Deserialize<'de> for Vocab {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vocab, D::Error> {
        struct Tokens;
        impl<'de> serde::de::Visitor<'de> for Tokens {
            type Value = Vocab;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of tokens to ids")
            }

            fn visit_map<M: serde::de::MapAccess<'de>>(
                self,
                mut map: M,
            ) -> Result<Vocab, M::Error> {
                let mut vocab = Vocab::default();
                while let Some(token) = map.next_key::<Token<'de>>()? {
                    let id: u32 = map.next_value()?;
                    vocab.pool.push_str(&token.0);
                    let end = u32::try_from(vocab.pool.len())
                        .map_err(|_| serde::de::Error::custom("vocabulary over 4 GB"))?;
                    vocab.tokens.push((end, id));
                }
                let index =
                    HashIndex::of((0..vocab.tokens.len()).map(|at| vocab.token(at).as_bytes()));
                vocab.index = Some(index);
                Ok(vocab)
            }
        }
        deserializer.deserialize_map(Tokens)
    }
}

/// A token as the file spells it: borrowed from the file unless it holds an escape.
struct Token<'a>(std::borrow::Cow<'a, str>);

impl<'de> Deserialize<'de> for Token<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Token<'de>, D::Error> {
        struct Text;
        impl<'de> serde::de::Visitor<'de> for Text {
            type Value = Token<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a token")
            }

            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Token<'de>, E> {
                Ok(Token(std::borrow::Cow::Borrowed(v)))
            }

            fn visit_str<E>(self, v: &str) -> Result<Token<'de>, E> {
                Ok(Token(std::borrow::Cow::Owned(v.to_owned())))
            }
        }
        deserializer.deserialize_str(Text)
    }
}

/// Why a `tokenizer.json` is not one [`WordPiece`] reproduces exactly, or cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum WordPieceError {
    /// The file cannot be read.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The file is not JSON of a tokenizer's shape.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// A tokenizer of another kind or with options this one does not reproduce.
    #[error("{0}")]
    Unsupported(&'static str),
    /// A special token missing from the vocabulary.
    #[error("no {0} in the vocabulary")]
    MissingToken(String),
}

impl WordPiece {
    /// Reads a `tokenizer.json`; `Err` says why this file is not one this tokenizer
    /// reproduces exactly (or cannot be read).
    pub fn load(path: &Path) -> Result<WordPiece, WordPieceError> {
        let text = std::fs::read(path)?;
        let file: File = serde_json::from_slice(&text)?;
        let expected_normalizer = json!({"type": "BertNormalizer", "clean_text": true,
            "handle_chinese_chars": true, "strip_accents": null, "lowercase": true});
        if file.normalizer != expected_normalizer
            || file.pre_tokenizer != json!({"type": "BertPreTokenizer"})
            || file.model.kind != "WordPiece"
        {
            return Err(WordPieceError::Unsupported(
                "not an uncased BERT WordPiece tokenizer",
            ));
        }
        if file
            .added_tokens
            .iter()
            .any(|a| a.single_word || a.lstrip || a.rstrip || a.normalized)
        {
            return Err(WordPieceError::Unsupported(
                "added tokens with matching options",
            ));
        }
        let id = |token: &str| {
            file.model
                .vocab
                .get(token)
                .ok_or_else(|| WordPieceError::MissingToken(token.to_owned()))
        };
        let (unk, cls, sep) = (id(&file.model.unk_token)?, id("[CLS]")?, id("[SEP]")?);
        let single = &file.post_processor["single"];
        let template = json!([{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "[SEP]", "type_id": 0}}]);
        if file.post_processor["type"] != "TemplateProcessing" || *single != template {
            return Err(WordPieceError::Unsupported("not a [CLS] $A [SEP] template"));
        }
        Ok(WordPiece {
            added: file
                .added_tokens
                .into_iter()
                .map(|a| (a.content, a.id))
                .collect(),
            unk,
            cls,
            sep,
            prefix: file.model.continuing_subword_prefix,
            max_word_chars: file.model.max_input_chars_per_word,
            vocab: file.model.vocab,
        })
    }

    /// The ids of `text` with `[CLS]` and `[SEP]`, at most `max_len` of them in all (the text's
    /// tokens are cut, the special ones kept).
    pub fn encode(&self, text: &str, max_len: usize) -> Vec<u32> {
        let mut ids = vec![self.cls];
        let mut rest = text;
        while !rest.is_empty() {
            let (plain, special) = self.next_added(rest);
            self.encode_plain(&rest[..plain], &mut ids);
            match special {
                Some((len, id)) => {
                    ids.push(id);
                    rest = &rest[plain + len..];
                }
                None => rest = "",
            }
        }
        ids.truncate(max_len.saturating_sub(1).max(1));
        ids.push(self.sep);
        ids
    }

    /// Where the first added token starts in `text` (or its end), and that token's length
    /// and id: the leftmost match, the longest there.
    fn next_added(&self, text: &str) -> (usize, Option<(usize, u32)>) {
        for (at, _) in text.match_indices('[') {
            let best = self
                .added
                .iter()
                .filter(|(content, _)| text[at..].starts_with(content.as_str()))
                .max_by_key(|(content, _)| content.len());
            if let Some((content, id)) = best {
                return (at, Some((content.len(), *id)));
            }
        }
        (text.len(), None)
    }

    /// Normalizes, splits and word-pieces a text holding no added token.
    fn encode_plain(&self, text: &str, ids: &mut Vec<u32>) {
        let normalized = normalize(text);
        let mut word = String::new();
        for c in normalized.chars() {
            if c.is_whitespace() {
                self.push_word(&mut word, ids);
            } else if is_punctuation(c) {
                self.push_word(&mut word, ids);
                word.push(c);
                self.push_word(&mut word, ids);
            } else {
                word.push(c);
            }
        }
        self.push_word(&mut word, ids);
    }

    /// WordPiece on one word (emptied after): greedy longest match from the left, `##` on
    /// every piece after the first, the whole word `[UNK]` when a piece has no match.
    fn push_word(&self, word: &mut String, ids: &mut Vec<u32>) {
        if word.is_empty() {
            return;
        }
        if word.chars().count() > self.max_word_chars {
            ids.push(self.unk);
            word.clear();
            return;
        }
        let first = ids.len();
        let mut start = 0;
        let mut piece = String::new();
        while start < word.len() {
            let mut end = word.len();
            let found = loop {
                piece.clear();
                if start > 0 {
                    piece.push_str(&self.prefix);
                }
                piece.push_str(&word[start..end]);
                if let Some(id) = self.vocab.get(&piece) {
                    break Some(id);
                }
                match word[start..end].chars().next_back() {
                    Some(c) if end - c.len_utf8() > start => end -= c.len_utf8(),
                    _ => break None,
                }
            };
            match found {
                Some(id) => {
                    ids.push(id);
                    start = end;
                }
                None => {
                    ids.truncate(first);
                    ids.push(self.unk);
                    break;
                }
            }
        }
        word.clear();
    }
}

/// BertNormalizer with `clean_text`, `handle_chinese_chars`, accents stripped and lowercase,
/// each step over the whole text in that order, as `tokenizers` runs them.
fn normalize(text: &str) -> String {
    let mut cleaned = String::with_capacity(text.len());
    for c in text.chars() {
        if c == '\0' || c == '\u{fffd}' || is_control(c) {
            continue;
        }
        if is_chinese(c) {
            cleaned.extend([' ', c, ' ']);
        } else if is_whitespace(c) {
            cleaned.push(' ');
        } else {
            cleaned.push(c);
        }
    }
    cleaned
        .nfd()
        .filter(|c| !c.is_mark_nonspacing())
        .flat_map(char::to_lowercase)
        .collect()
}

fn is_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r') || c.is_whitespace()
}

/// Unicode's "other" categories (Cc, Cf, Cn, Co, Cs), tab and newlines excepted.
fn is_control(c: char) -> bool {
    !matches!(c, '\t' | '\n' | '\r') && c.is_other()
}

fn is_punctuation(c: char) -> bool {
    c.is_ascii_punctuation() || c.is_punctuation()
}

/// The CJK ideograph blocks BERT splits into single characters.
fn is_chinese(c: char) -> bool {
    matches!(c as u32,
        0x4E00..=0x9FFF
        | 0x3400..=0x4DBF
        | 0x20000..=0x2A6DF
        | 0x2A700..=0x2B73F
        | 0x2B740..=0x2B81F
        | 0x2B920..=0x2CEAF
        | 0xF900..=0xFAFF
        | 0x2F800..=0x2FA1F)
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokenizers::{Tokenizer, TruncationParams};

    /// The installed default model (the test command runs scripts/fetch-model.sh first).
    fn model_dir() -> std::path::PathBuf {
        crate::local::models_dir().join(crate::local::DEFAULT_MODEL)
    }

    /// Texts that exercise every step: accents, CJK, controls, punctuation of many scripts,
    /// long words, added tokens in the text, truncation.
    fn texts() -> Vec<String> {
        let mut texts: Vec<String> = [
            "refund amount by customer region",
            "Which customers churned in Q3?  Show revenue (net) per-region!",
            "Café naïve résumé — Ångström, Straße, İstanbul, ΣΊΣΥΦΟΣ ὀδυσσεύς",
            "订单金额按地区 统计，以及 退款率。日本語のテキスト 한국어 텍스트",
            "tab\there\nnewline\r\u{0}nul \u{200b}zero-width\u{feff}bom \u{fffd}replacement",
            "a[SEP]b [CLS] [MASK]x [UNK] [PAD][PAD] [sep] [CLS",
            "emoji 🎉🚀 math ∑∫√ ½ ℃ ﬁ ligature ａｂｃ fullwidth",
            "snake_case_name camelCaseName orders.total_amount $1,234.56 100% #tag @user",
            "¿Qué? «quotes» „deutsch“ ‘single’ …ellipsis ‹› 【brackets】",
            "",
            "   ",
            "supercalifragilisticexpialidociousantidisestablishmentarianismfloccinaucinihilipilification",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        texts.push("x".repeat(101));
        texts.push("word ".repeat(300));
        texts.push("déjà-vu ".repeat(90));
        // Every character class in a deterministic pseudo-random mix.
        let ranges = [
            (0x20u32, 0x7f),
            (0xa0, 0x250),
            (0x370, 0x400),
            (0x4e00, 0x4e80),
            (0x2000, 0x2070),
            (0x300, 0x370),
        ];
        let mut seed = 7u64;
        for _ in 0..200 {
            let mut s = String::new();
            for _ in 0..40 {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let (lo, hi) = ranges[(seed >> 33) as usize % ranges.len()];
                let c = lo + (seed >> 40) as u32 % (hi - lo);
                s.extend(char::from_u32(c));
                if (seed >> 20).is_multiple_of(5) {
                    s.push(' ');
                }
            }
            texts.push(s);
        }
        texts
    }

    #[test]
    fn ids_equal_the_tokenizers_crate_s() {
        let dir = model_dir();
        let ours = WordPiece::load(&dir.join("tokenizer.json")).unwrap();
        let mut theirs = Tokenizer::from_file(dir.join("tokenizer.json")).unwrap();
        theirs.with_padding(None);
        theirs
            .with_truncation(Some(TruncationParams {
                max_length: 256,
                ..Default::default()
            }))
            .unwrap();
        for text in texts() {
            let want = theirs.encode(text.as_str(), true).unwrap();
            assert_eq!(ours.encode(&text, 256), want.get_ids(), "{text:?}");
        }
    }

    #[test]
    fn a_tokenizer_of_another_shape_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("tokenizer.json");
        std::fs::write(
            &path,
            r###"{"added_tokens": [], "normalizer": {"type": "NFC"}, "pre_tokenizer": null,
                "post_processor": null, "model": {"type": "WordPiece", "unk_token": "[UNK]",
                "continuing_subword_prefix": "##", "max_input_chars_per_word": 100,
                "vocab": {"[UNK]": 0}}}"###,
        )
        .unwrap();
        let err = WordPiece::load(&path).err().unwrap().to_string();
        assert!(err.contains("not an uncased BERT"), "{err}");
    }
}
