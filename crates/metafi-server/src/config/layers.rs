//! Builds the raw configuration from its layers: defaults < TOML file < `METAFI_*` environment
//! variables < command-line overrides. Every layer is checked against the known keys, so a
//! misspelt key or variable is an error instead of a silently ignored setting.

use std::path::Path;

use anyhow::{Context, anyhow, bail};
use serde::Deserialize;
use toml::{Table, Value};

use super::RawConfig;

/// Environment variables with the `METAFI_` prefix that are not configuration keys.
const RESERVED_ENV: &[&str] = &["METAFI_CONFIG"];
/// Prefixes of variables reserved for test harnesses and tools (never configuration).
const RESERVED_ENV_PREFIXES: &[&str] = &[
    "METAFI_TEST_",
    "METAFI_REQUIRE_",
    "METAFI_BENCH_",
    "METAFI_PG_",
];

/// Where configuration comes from, besides the defaults.
#[derive(Debug, Default)]
pub struct Sources<'a> {
    /// A TOML file.
    pub file: Option<&'a Path>,
    /// `(name, value)` pairs of the process environment; non-`METAFI_` ones are ignored.
    pub env: Vec<(String, String)>,
    /// `(key path, value)` pairs from flags, applied last.
    pub overrides: Vec<(String, String)>,
}

/// Merges every layer and deserializes the result.
pub fn load(sources: &Sources<'_>) -> anyhow::Result<RawConfig> {
    let defaults = defaults_table()?;
    let mut merged = defaults.clone();

    if let Some(path) = sources.file {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read config file {}", path.display()))?;
        let file: Table = toml::from_str(&text)
            .with_context(|| format!("config file {} is not valid TOML", path.display()))?;
        merge(&mut merged, file);
    }

    let keys = leaf_keys(&defaults);
    for (name, value) in &sources.env {
        if !name.starts_with("METAFI_")
            || RESERVED_ENV.contains(&name.as_str())
            || RESERVED_ENV_PREFIXES.iter().any(|p| name.starts_with(p))
        {
            continue;
        }
        let Some((path, default)) = keys.iter().find(|(path, _)| env_name(path) == *name) else {
            bail!(
                "unknown environment variable {name}: it matches no configuration key \
                 (run `metafi config default` for the list; key a.b_c is METAFI_A_B_C)"
            );
        };
        let typed = typed_value(default, value)
            .with_context(|| format!("environment variable {name} (key {path})"))?;
        set(&mut merged, path, typed);
    }

    for (path, value) in &sources.overrides {
        let Some((_, default)) = keys.iter().find(|(p, _)| p == path) else {
            bail!("unknown configuration key '{path}' (run `metafi config default` for the list)");
        };
        let typed = typed_value(default, value).with_context(|| format!("key {path}"))?;
        set(&mut merged, path, typed);
    }

    let deserializer = Value::Table(merged);
    serde_path_to_error::deserialize(deserializer).map_err(|e| {
        let path = e.path().to_string();
        anyhow!("configuration key '{path}': {}", e.into_inner())
    })
}

/// The environment variable name of a key path: `socket.port` → `METAFI_SOCKET_PORT`.
pub fn env_name(path: &str) -> String {
    format!("METAFI_{}", path.replace('.', "_").to_uppercase())
}

/// Every leaf key of the defaults with its default value, as `(dotted.path, value)`.
pub fn leaf_keys(table: &Table) -> Vec<(String, Value)> {
    fn walk(prefix: &str, table: &Table, out: &mut Vec<(String, Value)>) {
        for (key, value) in table {
            let path = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            match value {
                Value::Table(inner) => walk(&path, inner, out),
                other => out.push((path, other.clone())),
            }
        }
    }
    let mut out = Vec::new();
    walk("", table, &mut out);
    out
}

pub fn defaults_table() -> anyhow::Result<Table> {
    match Value::try_from(RawConfig::default()).context("serializing the default configuration")? {
        Value::Table(table) => Ok(table),
        _ => bail!("the default configuration is not a table"),
    }
}

/// Parses `text` as a value of the same TOML type as `default`.
fn typed_value(default: &Value, text: &str) -> anyhow::Result<Value> {
    Ok(match default {
        Value::String(_) => Value::String(text.to_owned()),
        Value::Integer(_) => Value::Integer(
            text.trim()
                .parse()
                .map_err(|_| anyhow!("expected an integer, got '{text}'"))?,
        ),
        Value::Float(_) => Value::Float(
            text.trim()
                .parse()
                .map_err(|_| anyhow!("expected a number, got '{text}'"))?,
        ),
        Value::Boolean(_) => Value::Boolean(match text.trim() {
            "true" | "1" => true,
            "false" | "0" => false,
            _ => bail!("expected true or false, got '{text}'"),
        }),
        _ => {
            #[derive(Deserialize)]
            struct Wrapper {
                v: Value,
            }
            toml::from_str::<Wrapper>(&format!("v = {text}"))
                .map_err(|_| anyhow!("expected a TOML value, got '{text}'"))?
                .v
        }
    })
}

fn merge(into: &mut Table, from: Table) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(Value::Table(existing)), Value::Table(incoming)) => merge(existing, incoming),
            (_, value) => {
                into.insert(key, value);
            }
        }
    }
}

fn set(table: &mut Table, path: &str, value: Value) {
    let mut parts: Vec<&str> = path.split('.').collect();
    let Some(last) = parts.pop() else { return };
    let mut current = table;
    for part in parts {
        let entry = current
            .entry(part.to_owned())
            .or_insert_with(|| Value::Table(Table::new()));
        if !entry.is_table() {
            *entry = Value::Table(Table::new());
        }
        let Value::Table(next) = entry else { return };
        current = next;
    }
    current.insert(last.to_owned(), value);
}
