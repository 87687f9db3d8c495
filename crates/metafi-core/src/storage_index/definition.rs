//! What a module registers (`register_storage_index`): the index's name, the objects it takes
//! and the fields it keeps, checked with Nakama's words.

/// One storage index as server code registers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDefinition {
    /// Unique name `storage_index_list` asks for.
    pub name: String,
    /// The collection whose objects are indexed.
    pub collection: String,
    /// Only objects with this key; empty for every key of the collection.
    pub key: String,
    /// Top-level keys of an object's value that are indexed (and, with `index_only`, kept).
    pub fields: Vec<String>,
    /// Of those, the ones a listing may order by (`value.<field>`).
    pub sortable_fields: Vec<String>,
    /// Entries kept; past 110% the oldest by update time are evicted down to this.
    pub max_entries: i64,
    /// Answer listings from the index alone (the value holds only the indexed fields) instead
    /// of reading the objects from storage.
    pub index_only: bool,
}

impl IndexDefinition {
    /// Nakama's checks (`CreateIndex`), its messages. The duplicate-name check is the
    /// registry's ([`super::StorageIndexes::define`]).
    pub fn check(&self) -> Result<(), String> {
        if self.name.is_empty() {
            return Err("storage index 'name' must be set".into());
        }
        if self.collection.is_empty() {
            return Err("storage index 'collection' must be set".into());
        }
        if self.max_entries < 1 {
            return Err("storage Index 'max_entries' must be > 0".into());
        }
        if self.fields.is_empty() {
            return Err(
                "storage Index 'fields' must contain at least one top level key to index".into(),
            );
        }
        Ok(())
    }

    /// Whether an object of `collection` with `key` belongs in this index.
    pub fn takes(&self, collection: &str, key: &str) -> bool {
        self.collection == collection && (self.key.is_empty() || self.key == key)
    }
}

/// Nakama's message for a second index of one name.
pub(crate) fn duplicate(name: &str) -> String {
    format!("cannot create index: index with name {name:?} already exists")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn definition() -> IndexDefinition {
        IndexDefinition {
            name: "idx".into(),
            collection: "c".into(),
            key: String::new(),
            fields: vec!["a".into()],
            sortable_fields: vec![],
            max_entries: 10,
            index_only: false,
        }
    }

    #[test]
    fn checks_say_what_nakama_says() {
        assert!(definition().check().is_ok());
        type Change = fn(&mut IndexDefinition);
        let cases: [(Change, &str); 4] = [
            (|d| d.name.clear(), "storage index 'name' must be set"),
            (
                |d| d.collection.clear(),
                "storage index 'collection' must be set",
            ),
            (
                |d| d.max_entries = 0,
                "storage Index 'max_entries' must be > 0",
            ),
            (
                |d| d.fields.clear(),
                "storage Index 'fields' must contain at least one top level key to index",
            ),
        ];
        for (change, message) in cases {
            let mut d = definition();
            change(&mut d);
            assert_eq!(d.check().unwrap_err(), message);
        }
        assert_eq!(
            duplicate("idx"),
            "cannot create index: index with name \"idx\" already exists"
        );
    }

    #[test]
    fn a_key_narrows_the_collection() {
        let mut d = definition();
        assert!(d.takes("c", "any"));
        assert!(!d.takes("other", "any"));
        d.key = "k".into();
        assert!(d.takes("c", "k"));
        assert!(!d.takes("c", "j"));
    }
}
