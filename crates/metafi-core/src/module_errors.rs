//! The last errors of each server module (the console's runtime page): an RPC, hook or match
//! handler that raised, ran past its time budget or hit the memory cap. Kept in memory, at most
//! `per_module` per module (the oldest dropped first), so memory stays bounded by the loaded
//! modules. The runtime records where it already logs a script's failure; the match engine
//! records a match handler that failed.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::Clock;

/// Default of `runtime.errors_per_module`.
pub const DEFAULT_ERRORS_PER_MODULE: usize = 20;

/// Most distinct modules kept (a guard: modules are the files loaded at start, plus native
/// modules and match handler names, far fewer in practice). Past it, the module with the
/// oldest last error is forgotten.
const MAX_MODULES: usize = 1000;

/// Longest message kept, bytes (a script's stack trace may be long).
const MAX_MESSAGE_BYTES: usize = 2048;

/// One failure of a module's function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleError {
    /// When, ms since the Unix epoch.
    pub time_ms: i64,
    /// `lua`, `javascript`, `native`.
    pub runtime: String,
    /// What failed: `rpc <id>`, `before <Hook>`, `after <Hook>`, `match <handler> <callback>`.
    pub function: String,
    /// `error`, `timeout` (time budget), `memory` (memory cap), `bad_result`.
    pub kind: String,
    pub message: String,
}

/// The last errors per module. Cheap to share (`Arc`); every method is short and locks once.
pub struct ModuleErrors {
    per_module: usize,
    clock: Arc<dyn Clock>,
    modules: Mutex<HashMap<String, VecDeque<ModuleError>>>,
}

impl std::fmt::Debug for ModuleErrors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModuleErrors")
            .field("per_module", &self.per_module)
            .finish_non_exhaustive()
    }
}

impl ModuleErrors {
    /// Keeps the last `per_module` errors of each module (0 keeps none).
    pub fn new(per_module: usize, clock: Arc<dyn Clock>) -> ModuleErrors {
        ModuleErrors {
            per_module,
            clock,
            modules: Mutex::new(HashMap::new()),
        }
    }

    /// Records a failure of `function` in `module`.
    pub fn record(&self, module: &str, runtime: &str, function: &str, kind: &str, message: &str) {
        if self.per_module == 0 {
            return;
        }
        let mut message = message.to_owned();
        if message.len() > MAX_MESSAGE_BYTES {
            let mut end = MAX_MESSAGE_BYTES;
            while !message.is_char_boundary(end) {
                end -= 1;
            }
            message.truncate(end);
            message.push('…');
        }
        let error = ModuleError {
            time_ms: self.clock.now_ms(),
            runtime: runtime.to_owned(),
            function: function.to_owned(),
            kind: kind.to_owned(),
            message,
        };
        let mut modules = self.modules.lock();
        if !modules.contains_key(module) && modules.len() >= MAX_MODULES {
            let oldest = modules
                .iter()
                .min_by_key(|(_, errors)| errors.back().map_or(i64::MIN, |e| e.time_ms))
                .map(|(name, _)| name.clone());
            if let Some(oldest) = oldest {
                modules.remove(&oldest);
            }
        }
        let errors = modules.entry(module.to_owned()).or_default();
        if errors.len() >= self.per_module {
            errors.pop_front();
        }
        errors.push_back(error);
    }

    /// Every module with errors, by name, each with its errors newest first.
    pub fn snapshot(&self) -> Vec<(String, Vec<ModuleError>)> {
        let modules = self.modules.lock();
        let mut all: Vec<(String, Vec<ModuleError>)> = modules
            .iter()
            .map(|(name, errors)| (name.clone(), errors.iter().rev().cloned().collect()))
            .collect();
        drop(modules);
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// The errors of one module, newest first.
    pub fn of(&self, module: &str) -> Vec<ModuleError> {
        self.modules
            .lock()
            .get(module)
            .map(|errors| errors.iter().rev().cloned().collect())
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::ManualClock;

    #[test]
    fn keeps_the_last_errors_of_each_module_newest_first() {
        let clock = Arc::new(ManualClock::new(1_000));
        let errors = ModuleErrors::new(3, clock.clone());
        for i in 0..5 {
            clock.advance_ms(1);
            errors.record("a.lua", "lua", &format!("rpc r{i}"), "error", "boom");
        }
        errors.record(
            "b.js",
            "javascript",
            "before ListFriends",
            "timeout",
            "slow",
        );
        let a = errors.of("a.lua");
        let names: Vec<&str> = a.iter().map(|e| e.function.as_str()).collect();
        assert_eq!(names, vec!["rpc r4", "rpc r3", "rpc r2"]);
        assert_eq!(a[0].time_ms, 1_005);
        let all = errors.snapshot();
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].0, "b.js");
        assert_eq!(all[1].1[0].kind, "timeout");
        assert!(errors.of("c.lua").is_empty());
    }

    #[test]
    fn long_messages_are_cut_and_zero_keeps_nothing() {
        let clock = Arc::new(ManualClock::new(0));
        let errors = ModuleErrors::new(2, clock.clone());
        errors.record("m", "lua", "rpc x", "error", &"é".repeat(5000));
        let kept = &errors.of("m")[0].message;
        assert!(kept.len() <= MAX_MESSAGE_BYTES + '…'.len_utf8());
        assert!(kept.ends_with('…'));
        let none = ModuleErrors::new(0, clock);
        none.record("m", "lua", "rpc x", "error", "boom");
        assert!(none.snapshot().is_empty());
    }

    #[test]
    fn the_number_of_modules_is_bounded() {
        let clock = Arc::new(ManualClock::new(0));
        let errors = ModuleErrors::new(1, clock.clone());
        for i in 0..=MAX_MODULES {
            clock.advance_ms(1);
            errors.record(&format!("m{i}"), "lua", "rpc x", "error", "boom");
        }
        let all = errors.snapshot();
        assert_eq!(all.len(), MAX_MODULES);
        assert!(
            errors.of("m0").is_empty(),
            "the oldest module was forgotten"
        );
        assert_eq!(errors.of(&format!("m{MAX_MODULES}")).len(), 1);
    }
}
