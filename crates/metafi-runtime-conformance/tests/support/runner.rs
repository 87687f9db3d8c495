//! Runs fixtures: each in every engine it names, each call checked against its expectation,
//! then the engines compared with each other.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use metafi_core::CoreError;
use metafi_storage::{Caller, ObjectId};
use serde_json::{Value, json};
use uuid::Uuid;

use super::fixture::{Call, Engine, Fixture, Outcome, SideEffects, Users};
use super::matcher::{camel_keys, match_json, shape, substitute, substitute_json};
use super::rig::{Parts, Rig, StartError, caller};

/// What the suite found, fixture by fixture.
#[derive(Debug, Default)]
pub struct Report {
    /// Fixtures that passed in every engine.
    pub passed: Vec<String>,
    /// One entry per problem: fixture, engine, call and what differed.
    pub failures: Vec<String>,
    /// Problems of fixtures marked `expect_fail_until_merge` (reported, not fatal).
    pub expected_failures: Vec<String>,
    /// Fixtures and calls marked `expect_fail_until_merge` that pass: the mark should go.
    pub unexpected_passes: Vec<String>,
}

/// What one fixture gave.
#[derive(Debug, Default)]
pub struct FixtureResult {
    /// Problems that fail the suite.
    pub problems: Vec<String>,
    /// Problems of calls marked `expect_fail_until_merge`.
    pub expected: Vec<String>,
    /// Calls marked `expect_fail_until_merge` that passed everywhere.
    pub unexpected_passes: Vec<String>,
}

impl Report {
    /// Panics with every failure, one per line, if there is any.
    pub fn assert_passed(&self) {
        assert!(
            self.failures.is_empty(),
            "{} conformance problem(s):\n{}",
            self.failures.len(),
            self.failures.join("\n")
        );
    }
}

/// Runs every fixture under `root` (only those whose name contains `only`, when given).
pub async fn run_all(root: &Path, only: Option<&str>) -> Report {
    let mut report = Report::default();
    let fixtures = match Fixture::discover(root) {
        Ok(fixtures) => fixtures,
        Err(e) => {
            report.failures.push(e);
            return report;
        }
    };
    if fixtures.is_empty() {
        report
            .failures
            .push(format!("no fixtures under {}", root.display()));
    }
    for fixture in fixtures {
        if only.is_some_and(|only| !fixture.name.contains(only)) {
            continue;
        }
        let result = run_fixture(&fixture).await;
        report.expected_failures.extend(result.expected);
        report.unexpected_passes.extend(result.unexpected_passes);
        let problems = result.problems;
        match (&fixture.expect.expect_fail_until_merge, problems.is_empty()) {
            (None, true) => report.passed.push(fixture.name.clone()),
            (None, false) => report.failures.extend(problems),
            (Some(_), true) => report.unexpected_passes.push(fixture.name.clone()),
            (Some(_), false) => report.expected_failures.extend(problems),
        }
    }
    report
}

/// Runs one fixture in every engine it names.
pub async fn run_fixture(fixture: &Fixture) -> FixtureResult {
    let expect = &fixture.expect;
    let mut found: Vec<Problem> = Vec::new();
    if expect.setup.together {
        let label = format!("{} [{}]", fixture.name, names(&expect.engines));
        found = run_engines(fixture, &expect.engines, None, &label).await.0;
    } else {
        let mut seen: BTreeMap<Engine, Vec<Option<Observed>>> = BTreeMap::new();
        for &engine in &expect.engines {
            let label = format!("{} [{engine}]", fixture.name);
            let (problems, observed) = run_engines(fixture, &[engine], Some(engine), &label).await;
            found.extend(problems);
            seen.insert(engine, observed);
        }
        found.extend(compare_engines(fixture, &seen));
    }
    let mut result = FixtureResult::default();
    let mut failed_calls = std::collections::BTreeSet::new();
    for problem in found {
        if let Some(index) = problem.call {
            failed_calls.insert(index);
        }
        let marked = problem
            .call
            .and_then(|index| expect.calls.get(index))
            .is_some_and(|call| call.expect_fail_until_merge.is_some());
        if marked {
            result.expected.push(problem.text);
        } else {
            result.problems.push(problem.text);
        }
    }
    for (index, call) in expect.calls.iter().enumerate() {
        if call.expect_fail_until_merge.is_some() && !failed_calls.contains(&index) {
            result
                .unexpected_passes
                .push(format!("{} {}", fixture.name, call_label(index, call)));
        }
    }
    result
}

/// One problem, and the index of the call it belongs to (none: loading, setup).
struct Problem {
    call: Option<usize>,
    text: String,
}

impl Problem {
    fn general(text: String) -> Problem {
        Problem { call: None, text }
    }
}

fn call_label(index: usize, call: &Call) -> String {
    format!("call #{} '{}'", index + 1, call.rpc)
}

/// What one engine answered to one call.
#[derive(Debug, Clone)]
struct Observed {
    outcome: Result<String, (i32, String)>,
}

async fn run_engines(
    fixture: &Fixture,
    engines: &[Engine],
    engine: Option<Engine>,
    label: &str,
) -> (Vec<Problem>, Vec<Option<Observed>>) {
    let expect = &fixture.expect;
    let mut problems: Vec<Problem> = Vec::new();
    let mut observed = Vec::new();
    let parts = match Parts::open(fixture).await {
        Ok(parts) => parts,
        Err(e) => return (vec![Problem::general(format!("{label}: {e}"))], observed),
    };
    let mut vars: BTreeMap<String, String> = parts
        .users
        .iter()
        .map(|(name, id)| (format!("user.{name}"), id.to_string()))
        .collect();
    let started = parts.start_runtime(fixture, engines).await;
    if let Some(load_error) = &expect.load_error {
        let wanted = load_error.contains_for(engine);
        match started {
            Ok(rig) => {
                problems.push(Problem::general(format!(
                    "{label}: the runtime started; expected a load error"
                )));
                rig.shutdown().await;
            }
            Err(StartError::Other(e)) => problems.push(Problem::general(format!("{label}: {e}"))),
            Err(StartError::Load(e)) => {
                let text = e.to_string();
                for needle in wanted {
                    if !text.contains(needle.as_str()) {
                        problems.push(Problem::general(format!(
                            "{label}: the load error lacks {needle:?}: {text}"
                        )));
                    }
                }
            }
        }
        return (problems, observed);
    }
    let rig = match started {
        Ok(rig) => Arc::new(rig),
        Err(StartError::Load(e)) => {
            let text = format!("{label}: load error: {e}");
            return (vec![Problem::general(text)], observed);
        }
        Err(StartError::Other(e)) => {
            return (vec![Problem::general(format!("{label}: {e}"))], observed);
        }
    };
    if let Some(effects) = &expect.after_load {
        for problem in check_effects(&rig, effects, &vars).await {
            problems.push(Problem::general(format!(
                "{label}: after loading: {problem}"
            )));
        }
    }
    for (index, call) in expect.calls.iter().enumerate() {
        if engine.is_some_and(|e| !call.runs_in(e)) {
            observed.push(None);
            continue;
        }
        let here = format!("{label} call #{} '{}'", index + 1, call.rpc_for(engine));
        let note = call
            .note
            .as_deref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        let session = Uuid::new_v4();
        vars.insert("session".into(), session.to_string());
        let (result, found) = make_call(&rig, call, engine, &vars, session).await;
        for problem in found {
            problems.push(Problem {
                call: Some(index),
                text: format!("{here}: {problem}{note}"),
            });
        }
        if let Some(effects) = &call.after {
            for problem in check_effects(&rig, effects, &vars).await {
                problems.push(Problem {
                    call: Some(index),
                    text: format!("{here}: after the call: {problem}{note}"),
                });
            }
        }
        observed.push(result);
    }
    rig.shutdown().await;
    (problems, observed)
}

async fn make_call(
    rig: &Arc<Rig>,
    call: &Call,
    engine: Option<Engine>,
    vars: &BTreeMap<String, String>,
    session: Uuid,
) -> (Option<Observed>, Vec<String>) {
    let prepared = (|| {
        let payload = substitute(&call.payload, vars)?;
        let user = call
            .caller
            .as_deref()
            .map(|name| caller(&rig.users, name, session))
            .transpose()?;
        Ok::<_, String>((payload, user))
    })();
    let (payload, user) = match prepared {
        Ok(prepared) => prepared,
        Err(e) => return (None, vec![e]),
    };
    let outcome = match engine {
        Some(engine) => call.outcome_for(engine),
        None => call.outcome.clone(),
    };
    let rpc = call.rpc_for(engine);
    if let Some(n) = call.parallel {
        let problems = parallel_call(rig, rpc, user, payload, n, &outcome, engine, vars).await;
        return (None, problems);
    }
    let answer = match rig.call(rpc, user, payload).await {
        Ok(answer) => answer,
        Err(hang) => return (None, vec![hang]),
    };
    let problems = check_outcome(&outcome, &answer, engine == Some(Engine::Js), vars);
    let observed = Observed {
        outcome: answer
            .map_err(|e: CoreError| (e.code().as_i32(), e.client_message().into_owned())),
    };
    (Some(observed), problems)
}

/// `n` calls at once; each answer must be the expected success or the expected error, and
/// each kind the fixture gives must occur.
#[allow(clippy::too_many_arguments)] // one call's whole description; private
async fn parallel_call(
    rig: &Arc<Rig>,
    rpc: &str,
    user: Option<metafi_core::RpcUser>,
    payload: String,
    n: usize,
    outcome: &Outcome,
    engine: Option<Engine>,
    vars: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..n {
        let (rig, rpc, user, payload) =
            (rig.clone(), rpc.to_owned(), user.clone(), payload.clone());
        calls.spawn(async move { rig.call(&rpc, user, payload).await });
    }
    let mut problems = Vec::new();
    let (mut served, mut refused) = (0, 0);
    let success = Outcome {
        code: None,
        ..outcome.clone()
    };
    let js = engine == Some(Engine::Js);
    while let Some(joined) = calls.join_next().await {
        let answer = match joined {
            Ok(Ok(answer)) => answer,
            Ok(Err(hang)) => {
                problems.push(hang);
                continue;
            }
            Err(e) => {
                problems.push(format!("a call panicked: {e}"));
                continue;
            }
        };
        let check = if answer.is_ok() { &success } else { outcome };
        let found = check_outcome(check, &answer, js, vars);
        if found.is_empty() {
            if answer.is_ok() {
                served += 1;
            } else {
                refused += 1;
            }
        }
        problems.extend(found);
    }
    let wants_success = outcome.result.is_some() || outcome.json.is_some();
    if wants_success && served == 0 {
        problems.push(format!("none of {n} parallel calls was served"));
    }
    if outcome.code.is_some() && refused == 0 {
        problems.push(format!("none of {n} parallel calls was refused"));
    }
    problems
}

fn check_outcome(
    outcome: &Outcome,
    answer: &Result<String, CoreError>,
    js: bool,
    vars: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    match (outcome.code, answer) {
        (None, Ok(text)) => {
            if let Some(want) = &outcome.result {
                match substitute(want, vars) {
                    Ok(want) if want == *text => {}
                    Ok(want) => problems.push(format!("expected result {want:?}, got {text:?}")),
                    Err(e) => problems.push(e),
                }
            }
            if let Some(want) = &outcome.json {
                let want = match substitute_json(want, vars) {
                    Ok(want) if js => camel_keys(&want),
                    Ok(want) => want,
                    Err(e) => return vec![e],
                };
                match serde_json::from_str::<Value>(text) {
                    Ok(got) => problems.extend(
                        match_json(&want, &got)
                            .into_iter()
                            .map(|p| format!("{p} (result {text})")),
                    ),
                    Err(e) => problems.push(format!("result is not JSON ({e}): {text:?}")),
                }
            }
        }
        (None, Err(e)) => problems.push(format!(
            "expected success, got code {} {:?}",
            e.code().as_i32(),
            e.client_message()
        )),
        (Some(code), Ok(text)) => {
            problems.push(format!("expected error code {code}, got result {text:?}"))
        }
        (Some(code), Err(e)) => {
            let message = e.client_message();
            if e.code().as_i32() != code {
                problems.push(format!(
                    "expected code {code}, got {} {message:?}",
                    e.code().as_i32()
                ));
            }
            if let Some(want) = &outcome.message {
                match substitute(want, vars) {
                    Ok(want) if want == message => {}
                    Ok(want) => {
                        problems.push(format!("expected message {want:?}, got {message:?}"))
                    }
                    Err(e) => problems.push(e),
                }
            }
            for needle in &outcome.message_contains {
                if !message.contains(needle.as_str()) {
                    problems.push(format!("message lacks {needle:?}: {message:?}"));
                }
            }
        }
    }
    problems
}

async fn check_effects(
    rig: &Rig,
    effects: &SideEffects,
    vars: &BTreeMap<String, String>,
) -> Vec<String> {
    let mut problems = Vec::new();
    for object in &effects.storage {
        let id = match object_id(&rig.users, &object.collection, &object.key, &object.user) {
            Ok(id) => id,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        let found = match rig.store.read_objects(Caller::Server, &[id]).await {
            Ok(found) => found,
            Err(e) => {
                problems.push(format!("storage read failed: {e}"));
                continue;
            }
        };
        let what = format!("storage {}/{}", object.collection, object.key);
        let Some(stored) = found.first() else {
            problems.push(format!("{what}: not stored"));
            continue;
        };
        if let Some(want) = &object.value {
            let want = match substitute_json(want, vars) {
                Ok(want) => want,
                Err(e) => {
                    problems.push(e);
                    continue;
                }
            };
            match serde_json::from_str::<Value>(&stored.value) {
                Ok(got) => problems.extend(
                    match_json(&want, &got)
                        .into_iter()
                        .map(|p| format!("{what} value {p}")),
                ),
                Err(e) => problems.push(format!("{what}: stored value is not JSON: {e}")),
            }
        }
        if let Some(want) = object.permission_read
            && want != stored.permission_read
        {
            problems.push(format!(
                "{what}: permission_read {} (expected {want})",
                stored.permission_read
            ));
        }
        if let Some(want) = object.permission_write
            && want != stored.permission_write
        {
            problems.push(format!(
                "{what}: permission_write {} (expected {want})",
                stored.permission_write
            ));
        }
    }
    for object in &effects.storage_absent {
        let id = match object_id(&rig.users, &object.collection, &object.key, &object.user) {
            Ok(id) => id,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        match rig.store.read_objects(Caller::Server, &[id]).await {
            Ok(found) if found.is_empty() => {}
            Ok(_) => problems.push(format!(
                "storage {}/{}: still stored",
                object.collection, object.key
            )),
            Err(e) => problems.push(format!("storage read failed: {e}")),
        }
    }
    if let Some(want) = effects.match_creates {
        let got = rig.matches.creates.load(Ordering::SeqCst);
        if got != want {
            problems.push(format!("{got} match_create calls (expected {want})"));
        }
    }
    if let Some(want) = &effects.match_created {
        match rig.matches.last_params.lock().clone() {
            None => problems.push("no match was created".to_owned()),
            Some((module, params)) => {
                if module != want.module {
                    problems.push(format!(
                        "last match_create module {module:?} (expected {:?})",
                        want.module
                    ));
                }
                if let Some(params_want) = &want.params {
                    problems.extend(
                        match_json(params_want, &Value::Object(params))
                            .into_iter()
                            .map(|p| format!("match_create params {p}")),
                    );
                }
            }
        }
    }
    if let Some(want) = &effects.match_query {
        match rig.matches.last_query.lock().clone() {
            None => problems.push("no match_list call".to_owned()),
            Some(query) => {
                let got = json!({
                    "limit": query.limit,
                    "authoritative": query.authoritative,
                    "label": query.label,
                    "min_size": query.min_size,
                    "max_size": query.max_size,
                    "query": query.query,
                });
                problems.extend(
                    match_json(want, &got)
                        .into_iter()
                        .map(|p| format!("match_list query {p}")),
                );
            }
        }
    }
    if let Some(want) = effects.gate_arrived {
        let got = rig.matches.gate.arrived();
        if got != want {
            problems.push(format!("{got} calls reached the gate (expected {want})"));
        }
    }
    problems
}

fn object_id(
    users: &Users,
    collection: &str,
    key: &str,
    user: &Option<String>,
) -> Result<ObjectId, String> {
    let user_id = match user {
        None => Uuid::nil(),
        Some(name) => *users
            .get(name)
            .ok_or_else(|| format!("user {name:?} is not in setup.users"))?,
    };
    Ok(ObjectId {
        collection: collection.to_owned(),
        key: key.to_owned(),
        user_id,
    })
}

/// The engines must answer alike where the fixture gives them one expectation: the same
/// error code and message, and results of the same shape (or the same text, when not JSON).
fn compare_engines(
    fixture: &Fixture,
    seen: &BTreeMap<Engine, Vec<Option<Observed>>>,
) -> Vec<Problem> {
    let mut problems = Vec::new();
    for (index, call) in fixture.expect.calls.iter().enumerate() {
        if call.has_overrides() {
            continue;
        }
        let answers: Vec<(Engine, &Observed)> = seen
            .iter()
            .filter_map(|(engine, calls)| Some((*engine, calls.get(index)?.as_ref()?)))
            .collect();
        let Some(((first_engine, first), rest)) = answers.split_first() else {
            continue;
        };
        for (engine, other) in rest {
            if let Some(why) = differ(first, other) {
                problems.push(Problem {
                    call: Some(index),
                    text: format!(
                        "{} {}: {first_engine} and {engine} differ: {why}",
                        fixture.name,
                        call_label(index, call)
                    ),
                });
            }
        }
    }
    problems
}

fn differ(a: &Observed, b: &Observed) -> Option<String> {
    match (&a.outcome, &b.outcome) {
        (Ok(x), Ok(y)) => {
            match (
                serde_json::from_str::<Value>(x),
                serde_json::from_str::<Value>(y),
            ) {
                (Ok(x), Ok(y)) => (shape(&x) != shape(&y))
                    .then(|| format!("results of different shapes: {x} / {y}")),
                _ => (x != y).then(|| format!("results {x:?} / {y:?}")),
            }
        }
        (Err(x), Err(y)) => (x != y).then(|| format!("errors {x:?} / {y:?}")),
        (x, y) => Some(format!("{x:?} / {y:?}")),
    }
}

fn names(engines: &[Engine]) -> String {
    engines
        .iter()
        .map(|e| e.name())
        .collect::<Vec<_>>()
        .join("+")
}
