//! Which names a question holds as whole words: the columns a question names verbatim (the
//! schema answer always shows them; model-level evidence weighs them, docs/spec/fusion.md §8.6).

/// Lowercase words joined by one space, padded (` free meal count k 12 `), so that a name is
/// found in a text as whole words.
pub(crate) fn words_of(text: &str) -> String {
    let mut out = String::from(" ");
    for word in text
        .to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
    {
        out.push_str(word);
        out.push(' ');
    }
    out
}

/// The items whose names the question holds as whole words (lowercase, split at anything not
/// a letter or digit). The longest names are read first and take their words, so `county
/// name` in a question names that column and not also `name`; every item of one name comes
/// together. Items come in the order given, within each name length.
pub(crate) fn named_in<T>(question: &str, names: Vec<(&str, T)>) -> Vec<T> {
    let mut names: Vec<(String, T)> = names
        .into_iter()
        .map(|(name, item)| (words_of(name), item))
        .filter(|(name, _)| !name.trim().is_empty())
        .collect();
    // Longest first; a stable sort keeps the given order among equals.
    names.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    let mut question = words_of(question);
    let mut taken: Vec<String> = Vec::new();
    let mut named = Vec::new();
    for (name, item) in names {
        if taken.contains(&name) || question.contains(name.as_str()) {
            question = question.replace(name.as_str(), " | ");
            if !taken.contains(&name) {
                taken.push(name);
            }
            named.push(item);
        }
    }
    named
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_found_as_whole_words_longest_first() {
        assert!(words_of("Free meal count (K-12)?").contains(&words_of("free meal count (k-12)")));
        assert!(!words_of("the segments").contains(&words_of("segment")));
        let names = vec![
            ("name", 1),
            ("County Name", 2),
            ("county_name", 3),
            ("segment", 4),
            ("", 5),
            ("zip", 6),
        ];
        // `county name` takes its words (both spellings), so `name` is not named; `zip` is.
        assert_eq!(
            named_in("Zip and county name of each school?", names),
            [2, 3, 6]
        );
    }
}
