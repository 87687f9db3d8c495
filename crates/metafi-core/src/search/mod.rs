//! The query language Nakama borrows from Bleve/Bluge (`+label.mode:ffa -value.level:>=10`),
//! evaluated against flattened JSON documents: match listings and matchmaker tickets
//! (`metafi-match`) and storage indexes ([`crate::storage_index`]) use the same parser, so a
//! query means the same thing everywhere.
//!
//! Key types: [`Query`] (parsed once, evaluated per document), [`Fields`] (a document's
//! dotted-path values).

pub mod fields;
pub mod query;

pub use fields::{FieldValue, Fields};
pub use query::{Query, QueryError};
