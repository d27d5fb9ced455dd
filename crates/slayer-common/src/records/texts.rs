//! The free-text fields of catalog records (descriptions and labels), which
//! `limits.description_bytes` bounds: a 50 MB description would otherwise be rendered,
//! indexed, embedded and returned by every search that finds it.

use super::{Datasource, Model};

/// One free-text field of a record, named as a message names it.
pub struct Text<'a> {
    /// `description`, `column 'amount' label`, `measure 'revenue' description`, …
    pub field: String,
    /// The text.
    pub value: &'a mut String,
}

impl Datasource {
    /// The datasource's free-text fields.
    pub fn texts_mut(&mut self) -> Vec<Text<'_>> {
        self.description
            .as_mut()
            .map(|value| Text {
                field: "description".into(),
                value,
            })
            .into_iter()
            .collect()
    }
}

impl Model {
    /// The model's free-text fields, its columns', measures' and aggregations' included.
    pub fn texts_mut<'a>(&'a mut self) -> Vec<Text<'a>> {
        let mut texts = Vec::new();
        let mut push = |field: String, value: Option<&'a mut String>| {
            if let Some(value) = value {
                texts.push(Text { field, value });
            }
        };
        push("description".into(), self.description.as_mut());
        for column in &mut self.columns {
            push(
                format!("column '{}' description", column.name),
                column.description.as_mut(),
            );
            push(
                format!("column '{}' label", column.name),
                column.label.as_mut(),
            );
        }
        for (i, measure) in self.measures.iter_mut().enumerate() {
            let name = measure
                .name
                .clone()
                .unwrap_or_else(|| format!("#{}", i + 1));
            push(
                format!("measure '{name}' description"),
                measure.description.as_mut(),
            );
            push(format!("measure '{name}' label"), measure.label.as_mut());
        }
        for aggregation in &mut self.aggregations {
            push(
                format!("aggregation '{}' description", aggregation.name),
                aggregation.description.as_mut(),
            );
        }
        texts
    }
}

/// The fields of `texts` longer than `limit` bytes, each cut to its longest prefix within
/// it (at a character boundary): `(field, bytes it had)`.
pub fn cut_long(texts: Vec<Text<'_>>, limit: usize) -> Vec<(String, usize)> {
    let mut cut = Vec::new();
    for text in texts {
        let len = text.value.len();
        if len > limit {
            let keep = crate::limits::cut(text.value, limit).len();
            text.value.truncate(keep);
            text.value.shrink_to_fit();
            cut.push((text.field, len));
        }
    }
    cut
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_texts_are_cut_at_a_character_boundary_and_named() {
        let mut model: Model = serde_json::from_value(serde_json::json!({
            "name": "orders", "data_source": "shop", "description": "é".repeat(10),
            "columns": [{"name": "amount", "label": "short", "description": "x".repeat(30)}],
            "measures": [{"formula": "amount:sum", "description": "ok"}]
        }))
        .unwrap();
        let cut = cut_long(model.texts_mut(), 15);
        assert_eq!(
            cut,
            vec![
                ("description".to_owned(), 20),
                ("column 'amount' description".to_owned(), 30)
            ]
        );
        assert_eq!(model.description.as_deref(), Some("ééééééé"));
        assert_eq!(model.columns[0].description.as_deref().unwrap().len(), 15);
        assert_eq!(model.columns[0].label.as_deref(), Some("short"));
        assert_eq!(model.measures[0].description.as_deref(), Some("ok"));
    }
}
