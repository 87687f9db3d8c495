//! A fixture as written in `expect.toml`: what to set up, which calls to make, and what each
//! call must give in every engine (with per-language overrides where Nakama's languages
//! legitimately differ).

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

/// A script engine (or native Rust) a fixture runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Engine {
    Lua,
    Js,
    Native,
}

impl Engine {
    pub fn name(self) -> &'static str {
        match self {
            Engine::Lua => "lua",
            Engine::Js => "js",
            Engine::Native => "native",
        }
    }
}

impl fmt::Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One fixture folder, parsed.
#[derive(Debug, Clone)]
pub struct Fixture {
    /// The folder's name.
    pub name: String,
    /// The folder: its `.lua` files are the Lua modules, its `.js` files the JS modules.
    pub dir: PathBuf,
    pub expect: Expect,
}

impl Fixture {
    /// The folder the runtime loads modules from.
    pub fn modules_dir(&self) -> PathBuf {
        match &self.expect.modules {
            Some(relative) => self.dir.join(relative),
            None => self.dir.clone(),
        }
    }

    /// Reads `dir/expect.toml`.
    pub fn load(dir: &Path) -> Result<Fixture, String> {
        let path = dir.join("expect.toml");
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let expect: Expect =
            toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        if expect.description.trim().is_empty() {
            return Err(format!("{}: say what the fixture checks", path.display()));
        }
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Ok(Fixture {
            name,
            dir: dir.to_owned(),
            expect,
        })
    }

    /// Every fixture folder under `root` (folders with an `expect.toml`), sorted by name.
    pub fn discover(root: &Path) -> Result<Vec<Fixture>, String> {
        let entries =
            std::fs::read_dir(root).map_err(|e| format!("cannot list {}: {e}", root.display()))?;
        let mut dirs: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .map(|entry| entry.path())
            .filter(|path| path.join("expect.toml").is_file())
            .collect();
        dirs.sort();
        dirs.iter().map(|dir| Fixture::load(dir)).collect()
    }
}

/// `expect.toml`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// What the fixture checks, in a sentence.
    pub description: String,
    /// Engines the fixture runs in; Lua and JavaScript unless it says otherwise.
    #[serde(default = "script_engines")]
    pub engines: Vec<Engine>,
    /// Set (to the reason) only when today's engines are known to disagree with Nakama and
    /// the fixture pins Nakama's behaviour: a failure is then reported, not fatal.
    #[serde(default)]
    pub expect_fail_until_merge: Option<String>,
    #[serde(default)]
    pub setup: Setup,
    /// The folder of modules to load, relative to the fixture's folder, when it is not the
    /// fixture's own folder (the repository's `examples/`, say).
    #[serde(default)]
    pub modules: Option<PathBuf>,
    /// The runtime must refuse to start, with these texts in its error.
    #[serde(default)]
    pub load_error: Option<LoadErrorExpect>,
    /// Side effects of loading the modules, checked before the first call.
    #[serde(default)]
    pub after_load: Option<SideEffects>,
    /// The calls, made in order, each against the state the previous ones left.
    #[serde(default, rename = "call")]
    pub calls: Vec<Call>,
}

fn script_engines() -> Vec<Engine> {
    vec![Engine::Lua, Engine::Js]
}

/// The runtime a fixture gets.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Setup {
    /// Users created in storage before the modules load; `${user.NAME}` in payloads and
    /// expectations is the user's id, and `as = "NAME"` calls as that user.
    pub users: Vec<String>,
    /// VMs in each engine's pool.
    pub vms: usize,
    /// Calls one VM serves at once.
    pub max_calls_per_vm: usize,
    /// Calls queued per pool.
    pub queue_capacity: usize,
    /// `runtime.call_timeout_ms`.
    pub call_timeout_ms: u64,
    /// `runtime.memory_limit_bytes`.
    pub memory_limit_bytes: usize,
    /// Load every engine's modules into one runtime (the fixture checks something across
    /// engines, such as an RPC id registered by both), instead of one runtime per engine.
    pub together: bool,
    /// Calls may run on the caller's IO worker (`runtime.inline_calls`, RUNTIME.md "Calls
    /// without thread hops"); `false` sends every call through the pool, for fixtures about the
    /// pool itself (its queue refuses calls the inline path would take).
    pub inline: bool,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup {
            users: Vec::new(),
            vms: 2,
            max_calls_per_vm: 16,
            queue_capacity: 64,
            call_timeout_ms: 5_000,
            memory_limit_bytes: 32 << 20,
            together: false,
            inline: true,
        }
    }
}

/// The texts a load error must contain: shared, or per engine (`load_error.lua.contains`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadErrorExpect {
    #[serde(default)]
    pub contains: Vec<String>,
    #[serde(default)]
    pub lua: Option<TextExpect>,
    #[serde(default)]
    pub js: Option<TextExpect>,
    #[serde(default)]
    pub native: Option<TextExpect>,
}

impl LoadErrorExpect {
    /// The texts for `engine` (its own list if it has one); all engines' runs together get
    /// the shared list.
    pub fn contains_for(&self, engine: Option<Engine>) -> &[String] {
        let own = match engine {
            Some(Engine::Lua) => self.lua.as_ref(),
            Some(Engine::Js) => self.js.as_ref(),
            Some(Engine::Native) => self.native.as_ref(),
            None => None,
        };
        own.map_or(&self.contains, |own| &own.contains)
    }
}

/// Texts that must appear in an error.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TextExpect {
    #[serde(default)]
    pub contains: Vec<String>,
}

/// One call of a fixture.
#[derive(Debug, Clone, Deserialize)]
#[serde(from = "RawCall")]
pub struct Call {
    /// The RPC id, as a client sends it.
    pub rpc: String,
    /// Another id in some engines (modules whose ids differ by language), e.g.
    /// `rpc_in = { js = "echo_js" }`.
    pub rpc_in: BTreeMap<Engine, String>,
    /// The payload (`${user.NAME}` and `${session}` replaced); empty by default.
    pub payload: String,
    /// Call as this user (from `setup.users`), with a session, vars `{k = "v"}`, client IP
    /// 127.0.0.9, query `q=1&q=2` and headers `Host`, `x-test: yes`, `X-Test: again` (seen
    /// as `X-Test = ["yes", "again"]`, as Nakama shows them); without it the call is
    /// server-to-server (no user).
    pub caller: Option<String>,
    /// Only in these engines (a behaviour one language has and the other spells otherwise).
    pub engines: Option<Vec<Engine>>,
    /// Why this call exists, shown when it fails.
    pub note: Option<String>,
    /// Set (to the reason) only when today's engines are known to disagree with Nakama on
    /// this call and it pins Nakama's behaviour: its problems are reported, not fatal.
    pub expect_fail_until_merge: Option<String>,
    /// What the call must give in every engine (the call's own `result`, `json`, `code`,
    /// `message`, `message_contains`).
    pub outcome: Outcome,
    /// Per-engine overrides (`lua.message = …`): each field given replaces the shared one;
    /// `json` is merged key by key.
    pub lua: Option<Outcome>,
    pub js: Option<Outcome>,
    pub native: Option<Outcome>,
    /// Made this many times at once. Every answer must then be the success this call
    /// expects (`result`/`json`) or the error it expects (`code`/`message`), and when both
    /// are given each must occur at least once (a full queue refuses some calls, say).
    pub parallel: Option<usize>,
    /// Checked after the call, in every engine.
    pub after: Option<SideEffects>,
}

/// A call as written: [`Call`] with its outcome's fields inline (serde's `flatten` would
/// let a misspelt key through).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCall {
    rpc: String,
    #[serde(default)]
    rpc_in: BTreeMap<Engine, String>,
    #[serde(default)]
    payload: String,
    #[serde(default, rename = "as")]
    caller: Option<String>,
    #[serde(default)]
    engines: Option<Vec<Engine>>,
    #[serde(default)]
    note: Option<String>,
    #[serde(default)]
    expect_fail_until_merge: Option<String>,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    json: Option<Value>,
    #[serde(default)]
    code: Option<i32>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    message_contains: Vec<String>,
    #[serde(default)]
    lua: Option<Outcome>,
    #[serde(default)]
    js: Option<Outcome>,
    #[serde(default)]
    native: Option<Outcome>,
    #[serde(default)]
    parallel: Option<usize>,
    #[serde(default)]
    after: Option<SideEffects>,
}

impl From<RawCall> for Call {
    fn from(raw: RawCall) -> Call {
        Call {
            rpc: raw.rpc,
            rpc_in: raw.rpc_in,
            payload: raw.payload,
            caller: raw.caller,
            engines: raw.engines,
            note: raw.note,
            expect_fail_until_merge: raw.expect_fail_until_merge,
            outcome: Outcome {
                result: raw.result,
                json: raw.json,
                code: raw.code,
                message: raw.message,
                message_contains: raw.message_contains,
            },
            lua: raw.lua,
            js: raw.js,
            native: raw.native,
            parallel: raw.parallel,
            after: raw.after,
        }
    }
}

impl Call {
    /// The call's expectation for `engine`: the shared one with that engine's overrides.
    pub fn outcome_for(&self, engine: Engine) -> Outcome {
        let over = match engine {
            Engine::Lua => self.lua.as_ref(),
            Engine::Js => self.js.as_ref(),
            Engine::Native => self.native.as_ref(),
        };
        match over {
            None => self.outcome.clone(),
            Some(over) => self.outcome.merged(over),
        }
    }

    /// Whether some engine has its own expectation (then engines are not compared with each
    /// other for this call).
    pub fn has_overrides(&self) -> bool {
        self.lua.is_some() || self.js.is_some() || self.native.is_some()
    }

    /// The RPC id to call in `engine`.
    pub fn rpc_for(&self, engine: Option<Engine>) -> &str {
        engine
            .and_then(|e| self.rpc_in.get(&e))
            .map_or(self.rpc.as_str(), String::as_str)
    }

    pub fn runs_in(&self, engine: Engine) -> bool {
        self.engines
            .as_ref()
            .is_none_or(|list| list.contains(&engine))
    }
}

/// What a call must give. Without `code` it must succeed.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Outcome {
    /// The exact result text.
    #[serde(default)]
    pub result: Option<String>,
    /// The result parsed as JSON must match this (see [`super::matcher`]); keys are written
    /// in Nakama's Lua spelling (`user_id`) and compared camelCased (`userId`) for JS.
    #[serde(default)]
    pub json: Option<Value>,
    /// The call must fail with this gRPC code (3 invalid argument, 4 deadline exceeded,
    /// 5 not found, 7 permission denied, 8 resource exhausted, 13 internal, …).
    #[serde(default)]
    pub code: Option<i32>,
    /// The client's error message, exactly.
    #[serde(default)]
    pub message: Option<String>,
    /// Texts the client's error message must contain.
    #[serde(default)]
    pub message_contains: Vec<String>,
}

impl Outcome {
    fn merged(&self, over: &Outcome) -> Outcome {
        let json = match (&self.json, &over.json) {
            (Some(base), Some(over)) => Some(super::matcher::merge(base, over)),
            (base, over) => over.clone().or_else(|| base.clone()),
        };
        Outcome {
            result: over.result.clone().or_else(|| self.result.clone()),
            json,
            code: over.code.or(self.code),
            message: over.message.clone().or_else(|| self.message.clone()),
            message_contains: if over.message_contains.is_empty() {
                self.message_contains.clone()
            } else {
                over.message_contains.clone()
            },
        }
    }
}

/// What must be true after a call (or after loading). Values are data: compared as written,
/// never camelCased.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SideEffects {
    /// Storage objects that must exist, with these fields.
    #[serde(default)]
    pub storage: Vec<StoredObject>,
    /// Storage objects that must not exist.
    #[serde(default)]
    pub storage_absent: Vec<ObjectRef>,
    /// How many matches scripts created so far (the fake match host counts them).
    #[serde(default)]
    pub match_creates: Option<usize>,
    /// The last `match_create`: module name and params (params matched as JSON).
    #[serde(default)]
    pub match_created: Option<MatchCreated>,
    /// The last `match_list` query, matched as JSON: `limit`, `authoritative`, `label`,
    /// `min_size`, `max_size`, `query`.
    #[serde(default)]
    pub match_query: Option<Value>,
    /// How many calls reached the fake match host's gate (`match_signal("sleep", "gate")`).
    #[serde(default)]
    pub gate_arrived: Option<usize>,
}

/// A storage object that must exist. `user` names a user of `setup.users`; without it the
/// object is system-owned.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StoredObject {
    pub collection: String,
    pub key: String,
    #[serde(default)]
    pub user: Option<String>,
    /// Matched as JSON against the stored value.
    #[serde(default)]
    pub value: Option<Value>,
    #[serde(default)]
    pub permission_read: Option<u8>,
    #[serde(default)]
    pub permission_write: Option<u8>,
}

/// A storage object by id.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectRef {
    pub collection: String,
    pub key: String,
    #[serde(default)]
    pub user: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatchCreated {
    pub module: String,
    #[serde(default)]
    pub params: Option<Value>,
}

/// Users by fixture name.
pub type Users = BTreeMap<String, uuid::Uuid>;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests: a panic is the failure report

    use super::*;

    #[test]
    fn a_misspelt_key_is_refused_not_ignored() {
        // A typo that was silently ignored would leave a check that cannot fail.
        for text in [
            "description = \"x\"\n[[call]]\nrpc = \"a\"\nmesage = \"typo\"\n",
            "description = \"x\"\n[[call]]\nrpc = \"a\"\nlua.mesage = \"typo\"\n",
            "description = \"x\"\n[[call]]\nrpc = \"a\"\nafter.storag = []\n",
            "description = \"x\"\nsetup.vm = 1\n",
            "description = \"x\"\nload_error.contain = [\"x\"]\n",
        ] {
            assert!(toml::from_str::<Expect>(text).is_err(), "accepted: {text}");
        }
    }

    #[test]
    fn a_call_merges_its_language_overrides_over_the_shared_expectation() {
        let text = r#"
            description = "x"
            [[call]]
            rpc = "a"
            rpc_in = { js = "a_js" }
            code = 13
            json = { a = 1, b = { c = 2 } }
            lua.message = "lua text"
            js.json = { b = { d = 3 } }
        "#;
        let expect: Expect = toml::from_str(text).unwrap();
        let call = &expect.calls[0];
        let lua = call.outcome_for(Engine::Lua);
        assert_eq!(
            (lua.code, lua.message.as_deref()),
            (Some(13), Some("lua text"))
        );
        let js = call.outcome_for(Engine::Js);
        assert_eq!(js.message, None);
        assert_eq!(
            js.json.unwrap(),
            serde_json::json!({"a": 1, "b": {"c": 2, "d": 3}})
        );
        assert_eq!(call.rpc_for(Some(Engine::Js)), "a_js");
        assert_eq!(call.rpc_for(Some(Engine::Lua)), "a");
        assert!(call.has_overrides());
    }
}
