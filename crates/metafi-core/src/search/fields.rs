//! The searchable fields of a document (a match in the listing, a matchmaker ticket), as
//! Nakama's Bleve index sees them: JSON objects flattened to dotted paths (`label.mode`),
//! arrays as several values of one field, strings as exact keywords, numbers as numbers and
//! booleans as the keywords `T`/`F`.

use serde_json::Value;

/// One indexed value.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldValue {
    Keyword(Box<str>),
    Number(f64),
    Bool(bool),
}

/// A document's fields, sorted by name so a field's values are found by binary search.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fields {
    entries: Vec<(Box<str>, FieldValue)>,
    sorted: bool,
}

/// Deepest JSON nesting indexed; deeper values are ignored (a label is at most 2 KiB anyway).
const MAX_DEPTH: usize = 32;

impl Fields {
    pub fn new() -> Fields {
        Fields::default()
    }

    pub fn keyword(&mut self, field: &str, value: &str) {
        self.push(field, FieldValue::Keyword(value.into()));
    }

    pub fn number(&mut self, field: &str, value: f64) {
        self.push(field, FieldValue::Number(value));
    }

    /// Adds `value` under `prefix`: objects become `prefix.key` fields, arrays several values
    /// of `prefix`, `null` nothing.
    pub fn json(&mut self, prefix: &str, value: &Value) {
        self.walk(&mut prefix.to_owned(), value, 0);
    }

    fn walk(&mut self, path: &mut String, value: &Value, depth: usize) {
        if depth > MAX_DEPTH {
            return;
        }
        match value {
            Value::Null => {}
            Value::Bool(b) => self.push(path, FieldValue::Bool(*b)),
            Value::Number(n) => {
                if let Some(n) = n.as_f64() {
                    self.push(path, FieldValue::Number(n));
                }
            }
            Value::String(s) => self.push(path, FieldValue::Keyword(s.as_str().into())),
            Value::Array(items) => {
                for item in items {
                    self.walk(path, item, depth + 1);
                }
            }
            Value::Object(map) => {
                for (key, item) in map {
                    let len = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(key);
                    self.walk(path, item, depth + 1);
                    path.truncate(len);
                }
            }
        }
    }

    fn push(&mut self, field: &str, value: FieldValue) {
        self.entries.push((field.into(), value));
        self.sorted = false;
    }

    /// Sorts for lookups; call once after building.
    pub fn finish(mut self) -> Fields {
        self.entries.sort_by(|a, b| a.0.cmp(&b.0));
        self.sorted = true;
        self
    }

    /// The values of `field` (none when absent).
    pub fn values(&self, field: &str) -> &[(Box<str>, FieldValue)] {
        debug_assert!(
            self.sorted || self.entries.is_empty(),
            "Fields::finish not called"
        );
        let start = self.entries.partition_point(|(name, _)| &**name < field);
        let end = start
            + self.entries[start..]
                .iter()
                .take_while(|(name, _)| &**name == field)
                .count();
        &self.entries[start..end]
    }

    /// Every `(field, keyword)` pair, for inverted indexes. Booleans count as `T`/`F`.
    pub fn keywords(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().filter_map(|(name, value)| match value {
            FieldValue::Keyword(k) => Some((&**name, &**k)),
            FieldValue::Bool(true) => Some((&**name, "T")),
            FieldValue::Bool(false) => Some((&**name, "F")),
            FieldValue::Number(_) => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn json_is_flattened_like_bleve() {
        let mut fields = Fields::new();
        fields.json(
            "label",
            &json!({"mode": "ffa", "skill": 12, "open": true, "tags": ["a", "b"], "map": {"name": "dust"}, "none": null}),
        );
        let fields = fields.finish();
        assert_eq!(
            fields.values("label.mode")[0].1,
            FieldValue::Keyword("ffa".into())
        );
        assert_eq!(fields.values("label.skill")[0].1, FieldValue::Number(12.0));
        assert_eq!(fields.values("label.open")[0].1, FieldValue::Bool(true));
        assert_eq!(fields.values("label.tags").len(), 2);
        assert_eq!(fields.values("label.map.name").len(), 1);
        assert!(fields.values("label.none").is_empty());
        assert!(fields.values("label").is_empty());
        let mut keywords: Vec<_> = fields.keywords().collect();
        keywords.sort();
        assert_eq!(
            keywords,
            vec![
                ("label.map.name", "dust"),
                ("label.mode", "ffa"),
                ("label.open", "T"),
                ("label.tags", "a"),
                ("label.tags", "b")
            ]
        );
    }
}
