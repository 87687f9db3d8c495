//! The query language of match listings and matchmaker tickets: the common forms of Nakama's
//! Bleve query strings, evaluated against [`Fields`].
//!
//! Supported (see `docs/MATCHES.md` for examples):
//!
//! - `field:value` — an exact keyword (`label.mode:ffa`); a number also matches numeric fields
//!   (`label.level:3`); `true`/`false` (or Bleve's `T`/`F`) match booleans;
//! - `field:"a phrase"` — an exact keyword containing spaces;
//! - `field:>=10`, `>10`, `<=10`, `<10` — numeric ranges;
//! - `field:pre*`, `field:a?c` — wildcards over keywords;
//! - `+clause` must match, `-clause` must not, a bare clause should match (with no `+`
//!   clause, at least one bare clause must match); `clause^2` weights it in the ranking;
//! - `*` alone (or an empty query) matches everything.
//!
//! Not supported, each rejected with an error naming it: regular expressions (`/…/`), fuzzy
//! terms (`~`), date ranges (`>"2024-01-01"`), grouping with parentheses, terms without a
//! field (Bleve's `_all`).

use std::fmt;

use super::fields::{FieldValue, Fields};

/// A query that could not be parsed; the message says what to change.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid query: {message}")]
pub struct QueryError {
    pub message: String,
}

fn error(message: impl Into<String>) -> QueryError {
    QueryError {
        message: message.into(),
    }
}

/// How a clause combines with the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Occur {
    /// `+clause`
    Must,
    /// a bare clause
    Should,
    /// `-clause`
    MustNot,
}

#[derive(Debug, Clone, PartialEq)]
enum Predicate {
    /// An exact keyword; `number` and `boolean` are what the text also means for numeric and
    /// boolean fields.
    Term {
        text: Box<str>,
        number: Option<f64>,
        boolean: Option<bool>,
    },
    Wildcard(Box<str>),
    Range {
        min: Option<(f64, bool)>,
        max: Option<(f64, bool)>,
    },
    All,
}

#[derive(Debug, Clone, PartialEq)]
struct Clause {
    occur: Occur,
    field: Box<str>,
    predicate: Predicate,
    boost: f64,
}

/// A parsed query.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Query {
    clauses: Vec<Clause>,
}

impl Query {
    /// Matches every document.
    pub fn all() -> Query {
        Query::default()
    }

    /// Parses a query string.
    pub fn parse(text: &str) -> Result<Query, QueryError> {
        let text = text.trim();
        if text.is_empty() || text == "*" {
            return Ok(Query::all());
        }
        let mut clauses = Vec::new();
        let mut chars = Lexer::new(text);
        while let Some(clause) = chars.clause()? {
            clauses.push(clause);
        }
        Ok(Query { clauses })
    }

    /// Whether `fields` match, and their score (the sum of the weights of matching clauses;
    /// documents with higher scores rank first).
    pub fn score(&self, fields: &Fields) -> Option<f64> {
        let mut score = 0.0;
        let mut has_must = false;
        let mut shoulds = 0;
        let mut shoulds_matched = 0;
        for clause in &self.clauses {
            let hit = clause.hits(fields);
            match clause.occur {
                Occur::Must => {
                    has_must = true;
                    if !hit {
                        return None;
                    }
                    score += clause.boost;
                }
                Occur::MustNot => {
                    if hit {
                        return None;
                    }
                }
                Occur::Should => {
                    shoulds += 1;
                    if hit {
                        shoulds_matched += 1;
                        score += clause.boost;
                    }
                }
            }
        }
        if !has_must && shoulds > 0 && shoulds_matched == 0 {
            return None;
        }
        Some(score)
    }

    pub fn matches(&self, fields: &Fields) -> bool {
        self.score(fields).is_some()
    }

    /// Whether every matching document scores the same (no optional clauses), so results can
    /// be taken in index order and the search can stop at the limit.
    pub fn is_unranked(&self) -> bool {
        !self.clauses.iter().any(|c| c.occur == Occur::Should)
    }

    /// A `(field, keyword)` every match must contain, if the query has one: the index looks it
    /// up instead of scanning every document.
    pub fn required_keyword(&self) -> Option<(&str, &str)> {
        self.clauses
            .iter()
            .find_map(|c| match (&c.occur, &c.predicate) {
                (
                    Occur::Must,
                    Predicate::Term {
                        text,
                        number: None,
                        boolean: None,
                    },
                ) => Some((&*c.field, &**text)),
                _ => None,
            })
    }
}

impl Clause {
    fn hits(&self, fields: &Fields) -> bool {
        if self.predicate == Predicate::All {
            return true;
        }
        fields
            .values(&self.field)
            .iter()
            .any(|(_, value)| self.predicate.hits(value))
    }
}

impl Predicate {
    fn hits(&self, value: &FieldValue) -> bool {
        match (self, value) {
            (Predicate::All, _) => true,
            (Predicate::Term { text, .. }, FieldValue::Keyword(k)) => **k == **text,
            (Predicate::Term { number, .. }, FieldValue::Number(n)) => {
                number.is_some_and(|x| x == *n)
            }
            (Predicate::Term { boolean, .. }, FieldValue::Bool(b)) => {
                boolean.is_some_and(|x| x == *b)
            }
            (Predicate::Wildcard(pattern), FieldValue::Keyword(k)) => wildcard(pattern, k),
            (Predicate::Wildcard(pattern), FieldValue::Bool(b)) => {
                wildcard(pattern, if *b { "T" } else { "F" })
            }
            (Predicate::Wildcard(_), FieldValue::Number(_)) => false,
            (Predicate::Range { min, max }, FieldValue::Number(n)) => {
                min.is_none_or(|(m, inclusive)| if inclusive { *n >= m } else { *n > m })
                    && max.is_none_or(|(m, inclusive)| if inclusive { *n <= m } else { *n < m })
            }
            (Predicate::Range { .. }, _) => false,
        }
    }
}

/// `*` any run of characters, `?` exactly one.
fn wildcard(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Reads clauses off a query string.
struct Lexer<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Lexer<'a> {
    fn new(text: &'a str) -> Lexer<'a> {
        Lexer { text, at: 0 }
    }

    fn peek(&self) -> Option<char> {
        self.text[self.at..].chars().next()
    }

    fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.at += c.len_utf8();
        Some(c)
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
    }

    fn clause(&mut self) -> Result<Option<Clause>, QueryError> {
        self.skip_space();
        let Some(first) = self.peek() else {
            return Ok(None);
        };
        let occur = match first {
            '+' => {
                self.bump();
                Occur::Must
            }
            '-' => {
                self.bump();
                Occur::MustNot
            }
            _ => Occur::Should,
        };
        match self.peek() {
            Some('(' | ')') => {
                return Err(error(
                    "grouping with parentheses is not supported; write each clause with its own +/- prefix",
                ));
            }
            None => return Err(error("a '+' or '-' must be followed by a clause")),
            Some(c) if c.is_whitespace() => {
                return Err(error("a '+' or '-' must be followed by a clause"));
            }
            _ => {}
        }
        let start = self.at;
        // The field: everything up to an unescaped ':'.
        let mut field = String::new();
        let mut has_field = false;
        while let Some(c) = self.peek() {
            if c.is_whitespace() || c == '"' {
                break;
            }
            if c == ':' {
                self.bump();
                has_field = true;
                break;
            }
            if c == '\\' {
                self.bump();
                match self.bump() {
                    Some(escaped) => field.push(escaped),
                    None => return Err(error("the query ends with an unfinished escape '\\'")),
                }
                continue;
            }
            field.push(c);
            self.bump();
        }
        if !has_field {
            if field == "*" {
                return Ok(Some(Clause {
                    occur,
                    field: "".into(),
                    predicate: Predicate::All,
                    boost: 1.0,
                }));
            }
            let shown = &self.text[start..self.at];
            return Err(error(format!(
                "'{shown}' has no field; write field:value (for example label.mode:{shown}) — there is no default field"
            )));
        }
        if field.is_empty() {
            return Err(error("a clause starts with ':'; write field:value"));
        }
        let (predicate, boost) = self.value(&field)?;
        Ok(Some(Clause {
            occur,
            field: field.into(),
            predicate,
            boost,
        }))
    }

    fn value(&mut self, field: &str) -> Result<(Predicate, f64), QueryError> {
        match self.peek() {
            None => Err(error(format!("'{field}:' has no value"))),
            Some(c) if c.is_whitespace() => Err(error(format!("'{field}:' has no value"))),
            Some('/') => Err(error(format!(
                "regular expressions ('{field}:/…/') are not supported; use an exact value or a wildcard (*, ?)"
            ))),
            Some('(') => Err(error(
                "grouping with parentheses is not supported; write each clause with its own +/- prefix",
            )),
            Some('"') => {
                self.bump();
                let mut phrase = String::new();
                loop {
                    match self.bump() {
                        None => return Err(error("a quoted value is not closed with '\"'")),
                        Some('"') => break,
                        Some('\\') => match self.bump() {
                            Some(c) => phrase.push(c),
                            None => return Err(error("a quoted value is not closed with '\"'")),
                        },
                        Some(c) => phrase.push(c),
                    }
                }
                let boost = self.boost()?;
                Ok((term(phrase), boost))
            }
            Some('>' | '<') => {
                let greater = self.bump() == Some('>');
                let inclusive = if self.peek() == Some('=') {
                    self.bump();
                    true
                } else {
                    false
                };
                if self.peek() == Some('"') {
                    return Err(error(format!(
                        "date ranges ('{field}:>\"…\"') are not supported; index times as numbers (for example Unix seconds) and compare those"
                    )));
                }
                let raw = self.word()?;
                let (raw, boost) = split_boost(&raw)?;
                let number = parse_number(&raw).ok_or_else(|| {
                    error(format!(
                        "'{field}:{}{}{raw}' compares with something that is not a number",
                        if greater { ">" } else { "<" },
                        if inclusive { "=" } else { "" }
                    ))
                })?;
                let bound = Some((number, inclusive));
                let predicate = if greater {
                    Predicate::Range {
                        min: bound,
                        max: None,
                    }
                } else {
                    Predicate::Range {
                        min: None,
                        max: bound,
                    }
                };
                Ok((predicate, boost))
            }
            Some(_) => {
                let raw = self.raw_word()?;
                let (raw, boost) = split_boost(&raw)?;
                if has_unescaped(&raw, '~') {
                    return Err(error(format!(
                        "fuzzy terms ('{field}:{raw}') are not supported; use an exact value or a wildcard (*, ?)"
                    )));
                }
                let wild = has_unescaped(&raw, '*') || has_unescaped(&raw, '?');
                let text = unescape(&raw);
                if wild {
                    // Escaped wildcard characters are literal; the matcher treats them as
                    // wildcards anyway, a documented simplification.
                    Ok((Predicate::Wildcard(text.into()), boost))
                } else {
                    Ok((term(text), boost))
                }
            }
        }
    }

    /// The rest of the value up to whitespace, escapes kept (`\x` stays two characters).
    fn raw_word(&mut self) -> Result<String, QueryError> {
        let mut out = String::new();
        while let Some(c) = self.peek() {
            if c.is_whitespace() {
                break;
            }
            self.bump();
            if c == '\\' {
                match self.bump() {
                    Some(escaped) => {
                        out.push('\\');
                        out.push(escaped);
                    }
                    None => return Err(error("the query ends with an unfinished escape '\\'")),
                }
                continue;
            }
            out.push(c);
        }
        Ok(out)
    }

    fn word(&mut self) -> Result<String, QueryError> {
        Ok(unescape(&self.raw_word()?))
    }

    /// An optional `^weight` right after a quoted value.
    fn boost(&mut self) -> Result<f64, QueryError> {
        if self.peek() != Some('^') {
            return Ok(1.0);
        }
        self.bump();
        let raw = self.word()?;
        parse_number(&raw).filter(|b| *b >= 0.0).ok_or_else(|| {
            error(format!(
                "'^{raw}' is not a weight; write a number such as ^2"
            ))
        })
    }
}

/// Splits a trailing unescaped `^weight` off a raw value.
fn split_boost(raw: &str) -> Result<(String, f64), QueryError> {
    let bytes = raw.as_bytes();
    let mut caret = None;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'^' => {
                caret = Some(i);
                i += 1;
            }
            _ => i += 1,
        }
    }
    match caret {
        None => Ok((raw.to_owned(), 1.0)),
        Some(at) => {
            let weight = &raw[at + 1..];
            let boost = parse_number(weight).filter(|b| *b >= 0.0).ok_or_else(|| {
                error(format!(
                    "'^{weight}' is not a weight; write a number such as ^2"
                ))
            })?;
            Ok((raw[..at].to_owned(), boost))
        }
    }
}

fn has_unescaped(raw: &str, wanted: char) -> bool {
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == wanted {
            return true;
        }
    }
    false
}

fn unescape(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut escaped = false;
    for c in raw.chars() {
        if escaped {
            out.push(c);
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else {
            out.push(c);
        }
    }
    out
}

fn parse_number(text: &str) -> Option<f64> {
    let n: f64 = text.parse().ok()?;
    n.is_finite().then_some(n)
}

fn term(text: String) -> Predicate {
    let number = parse_number(&text);
    let boolean = match text.as_str() {
        "true" | "T" => Some(true),
        "false" | "F" => Some(false),
        _ => None,
    };
    Predicate::Term {
        text: text.into(),
        number,
        boolean,
    }
}

impl fmt::Display for Occur {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Occur::Must => "+",
            Occur::Should => "",
            Occur::MustNot => "-",
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn label(value: serde_json::Value) -> Fields {
        let mut fields = Fields::new();
        fields.json("label", &value);
        fields.finish()
    }

    fn q(text: &str) -> Query {
        Query::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn nakama_common_forms() {
        let doc = label(
            json!({"mode": "ffa", "skill": 12, "locked": false, "region": "eu west", "ids": ["a1", "b2"]}),
        );
        assert!(q("+label.mode:ffa").matches(&doc));
        assert!(!q("+label.mode:tdm").matches(&doc));
        assert!(q("-label.locked:true").matches(&doc));
        assert!(!q("-label.locked:false").matches(&doc));
        assert!(q("+label.locked:F").matches(&doc));
        assert!(q("+label.skill:>=10").matches(&doc));
        assert!(q("+label.skill:>=12 +label.skill:<=12").matches(&doc));
        assert!(!q("+label.skill:>12").matches(&doc));
        assert!(q("+label.skill:<13").matches(&doc));
        assert!(q("label.skill:12").matches(&doc));
        assert!(q("+label.region:\"eu west\"").matches(&doc));
        assert!(q("+label.ids:b2").matches(&doc), "arrays match any element");
        assert!(q("+label.mode:f*").matches(&doc));
        assert!(q("+label.mode:f?a").matches(&doc));
        assert!(!q("+label.mode:f?").matches(&doc));
        assert!(q("*").matches(&doc));
        assert!(q("").matches(&doc));
    }

    #[test]
    fn should_clauses_need_one_hit_unless_something_is_required() {
        let doc = label(json!({"mode": "ffa", "map": "dust"}));
        assert!(q("label.mode:tdm label.map:dust").matches(&doc));
        assert!(!q("label.mode:tdm label.map:train").matches(&doc));
        assert!(
            q("+label.mode:ffa label.map:train").matches(&doc),
            "optional once a + clause exists"
        );
        assert!(
            q("-label.mode:tdm").matches(&doc),
            "only exclusions: everything else matches"
        );
    }

    #[test]
    fn scores_add_the_weights_of_matching_clauses() {
        let doc = label(json!({"mode": "ffa", "map": "dust"}));
        assert_eq!(q("+label.mode:ffa label.map:dust^3").score(&doc), Some(4.0));
        assert_eq!(
            q("+label.mode:ffa label.map:train^3").score(&doc),
            Some(1.0)
        );
        assert!(!q("+label.mode:ffa label.map:dust").is_unranked());
        assert!(q("+label.mode:ffa -label.map:x").is_unranked());
    }

    #[test]
    fn required_keywords_are_offered_to_the_index() {
        assert_eq!(
            q("label.x:1 +label.mode:ffa").required_keyword(),
            Some(("label.mode", "ffa"))
        );
        assert_eq!(
            q("+label.level:3").required_keyword(),
            None,
            "numbers also match numeric fields"
        );
        assert_eq!(q("-label.mode:ffa").required_keyword(), None);
    }

    #[test]
    fn unsupported_forms_say_what_to_do() {
        for (text, needle) in [
            ("+label.name:/ab+/", "regular expressions"),
            ("+label.name:abc~", "fuzzy"),
            ("+label.when:>\"2024-01-01\"", "date ranges"),
            ("(label.a:1 label.b:2)", "parentheses"),
            ("ffa", "no field"),
            ("+label.skill:>=ten", "not a number"),
            ("+label.a:\"open", "not closed"),
            ("+ label.a:b", "followed by a clause"),
            ("label.a:", "has no value"),
            ("label.a:b^x", "not a weight"),
        ] {
            let e = Query::parse(text).expect_err(text);
            assert!(e.message.contains(needle), "{text}: {e}");
        }
    }

    #[test]
    fn escapes_keep_special_characters() {
        let doc = label(json!({"name": "a:b c"}));
        assert!(q(r"+label.name:a\:b\ c").matches(&doc));
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics(text in "\\PC{0,40}") {
            let _ = Query::parse(&text);
        }

        #[test]
        fn wildcard_star_matches_everything(text in "[a-z]{0,12}") {
            proptest::prop_assert!(wildcard("*", &text));
            proptest::prop_assert!(wildcard(&text, &text));
        }
    }
}
