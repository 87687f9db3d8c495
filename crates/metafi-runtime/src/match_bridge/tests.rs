//! The bridge's rules with a fake script value, in both dialects.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use metafi_match::{MAX_LABEL_BYTES, Presence};
use uuid::Uuid;

use super::*;

/// A table/object: a list, or fields; `id` is its identity (a Lua table's address).
#[derive(Debug, Clone, Default)]
struct Fake {
    id: usize,
    items: Option<Vec<Arg<Fake>>>,
    fields: HashMap<&'static str, Arg<Fake>>,
}

impl ScriptObject for Fake {
    type Key = usize;
    type Error = String;

    fn items(&self) -> Result<Option<Vec<Arg<Fake>>>, String> {
        Ok(self.items.clone())
    }

    fn field(&self, name: &str) -> Arg<Fake> {
        self.fields.get(name).cloned().unwrap_or(Arg::Absent)
    }

    fn key(&self) -> Option<usize> {
        Some(self.id)
    }
}

fn text(s: &str) -> Arg<Fake> {
    Arg::Str(Bytes::copy_from_slice(s.as_bytes()))
}

fn object(fields: &[(&'static str, Arg<Fake>)]) -> Arg<Fake> {
    Arg::Object(Fake {
        fields: fields.iter().cloned().collect(),
        ..Fake::default()
    })
}

fn list(items: Vec<Arg<Fake>>) -> Arg<Fake> {
    Arg::Object(Fake {
        items: Some(items),
        ..Fake::default()
    })
}

/// A broadcast of op code 1 with `options` in place of `reliable`.
fn options_only(options: Arg<Fake>) -> [Arg<Fake>; 5] {
    [
        Arg::Integer(1),
        Arg::Absent,
        Arg::Absent,
        Arg::Absent,
        options,
    ]
}

fn argument(result: Result<(), Refusal<String>>) -> (usize, String) {
    match result {
        Err(Refusal::Argument { position, message }) => (position, message.into_owned()),
        other => panic!("expected an argument error, got {other:?}"),
    }
}

fn failed(result: Result<(), Refusal<String>>) -> String {
    match result {
        Err(Refusal::Failed(message)) => message.into_owned(),
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn presence(id: Uuid) -> Arc<Presence> {
    Arc::new(Presence {
        user_id: Uuid::new_v4(),
        session_id: id,
        username: Arc::from("handed"),
        node: Arc::from("n1"),
    })
}

#[test]
fn each_dialect_refuses_bad_arguments_with_nakamas_message() {
    let lua = DispatchRecorder::<usize>::new(Dialect::Lua);
    let js = DispatchRecorder::<usize>::new(Dialect::Js);
    let cases: Vec<(Vec<Arg<Fake>>, usize, &str, &str)> = vec![
        (vec![], 1, "number expected", "expects an op code number"),
        (
            vec![Arg::Integer(1), Arg::Bool(true)],
            2,
            "expects data to be a string or nil",
            "expects data to be an ArrayBuffer, a Uint8Array or a string",
        ),
        (
            vec![Arg::Integer(1), Arg::Absent, text("everyone")],
            3,
            "expects a valid set of presences",
            "expects an array of presences",
        ),
        (
            vec![Arg::Integer(1), Arg::Absent, list(vec![object(&[])])],
            3,
            "expects each presence to have a valid session_id",
            "expects each presence to have a valid sessionId",
        ),
        (
            vec![
                Arg::Integer(1),
                Arg::Absent,
                Arg::Absent,
                object(&[("username", text("x"))]),
            ],
            4,
            "expects presence to have a valid user_id, session_id, and username",
            "expects sender to have a valid userId, sessionId and username",
        ),
        (
            vec![
                Arg::Integer(1),
                Arg::Absent,
                Arg::Absent,
                Arg::Absent,
                text("yes"),
            ],
            5,
            "boolean expected",
            "expects reliable to be a boolean",
        ),
    ];
    for (args, position, lua_message, js_message) in cases {
        assert_eq!(
            argument(lua.broadcast(&args, false)),
            (position, lua_message.to_owned())
        );
        assert_eq!(
            argument(js.broadcast(&args, false)),
            (position, js_message.to_owned())
        );
    }
    assert_eq!(
        argument(lua.update_label::<Fake>(&Arg::Bool(true))),
        (1, "expects label string".to_owned())
    );
    assert_eq!(
        argument(js.update_label::<Fake>(&Arg::Null)).1,
        "expects a string"
    );
    assert!(lua.recorded().is_empty() && js.recorded().is_empty());
}

#[test]
fn a_presence_handed_out_is_known_by_its_key_and_one_built_by_the_script_by_its_fields() {
    let recorder = DispatchRecorder::<usize>::new(Dialect::Lua);
    let member = Uuid::new_v4();
    recorder.hand_out(7, presence(member));
    let handed = Arg::Object(Fake {
        id: 7,
        ..Fake::default()
    });
    let built = Uuid::new_v4();
    let by_fields = object(&[("session_id", text(&built.to_string()))]);
    recorder
        .broadcast(
            &[
                Arg::Integer(3),
                text("hi"),
                list(vec![handed.clone(), by_fields]),
                handed,
            ],
            false,
        )
        .unwrap();
    let recorded = recorder.recorded();
    assert_eq!(recorded.len(), 1);
    assert!(
        recorded[0].contains(&format!("to: Some([{member}, {built}])")),
        "{recorded:?}"
    );
    assert!(recorded[0].contains("username: \"handed\""), "{recorded:?}");
    // Once forgotten, the same table must carry valid fields.
    recorder.forget(&7);
    let gone = Arg::Object(Fake {
        id: 7,
        ..Fake::default()
    });
    assert_eq!(
        argument(recorder.broadcast(&[Arg::Integer(3), Arg::Absent, list(vec![gone])], false)).1,
        "expects each presence to have a valid session_id"
    );
    // An empty recipient list sends nothing.
    recorder.discard();
    recorder
        .broadcast(&[Arg::Integer(3), Arg::Absent, list(vec![])], false)
        .unwrap();
    assert!(recorder.recorded().is_empty());
}

#[test]
fn deferred_broadcasts_stop_at_the_room_the_dispatcher_gives() {
    let recorder = DispatchRecorder::<usize>::new(Dialect::Js);
    recorder.begin(1);
    recorder
        .broadcast::<Fake>(&[Arg::Integer(1)], true)
        .unwrap();
    let full = failed(recorder.broadcast::<Fake>(&[Arg::Integer(2)], true));
    assert_eq!(
        full,
        "error deferring message broadcast: deferred message broadcast buffer full (match.deferred_queue_size)"
    );
    // Immediate sends are not limited.
    recorder
        .broadcast::<Fake>(&[Arg::Integer(3)], false)
        .unwrap();
    assert_eq!(recorder.recorded().len(), 2);
}

#[test]
fn a_label_over_the_limit_is_refused() {
    let recorder = DispatchRecorder::<usize>::new(Dialect::Lua);
    recorder
        .update_label::<Fake>(&text(&"x".repeat(MAX_LABEL_BYTES)))
        .unwrap();
    let long = failed(recorder.update_label::<Fake>(&text(&"x".repeat(MAX_LABEL_BYTES + 1))));
    assert_eq!(
        long,
        format!("error updating match label: label must be {MAX_LABEL_BYTES} bytes or less")
    );
    recorder.update_label::<Fake>(&Arg::Absent).unwrap();
    assert_eq!(
        recorder.recorded().last().map(String::as_str),
        Some("Label(\"\")")
    );
}

#[test]
fn delivery_options_name_every_class_and_set_reliable_from_it() {
    use metafi_proto::realtime::DeliveryClass;
    let cases = [
        (
            object(&[("class", text("reliable_ordered"))]),
            DeliveryClass::default_stream(),
        ),
        (
            object(&[("class", text("reliable_ordered")), ("lane", text("talk"))]),
            DeliveryClass::ordered("talk"),
        ),
        (
            object(&[("class", text("reliable_unordered"))]),
            DeliveryClass::ReliableUnordered,
        ),
        (
            object(&[("class", text("unreliable"))]),
            DeliveryClass::Unreliable,
        ),
        (
            object(&[("class", text("unreliable_latest")), ("lane", text("pos"))]),
            DeliveryClass::latest("pos"),
        ),
    ];
    for (options, class) in cases {
        let recorder = DispatchRecorder::<usize>::new(Dialect::Lua);
        recorder.broadcast(&options_only(options), false).unwrap();
        let recorded = recorder.recorded().join("");
        assert!(
            recorded.contains(&format!("reliable: {}", class.is_reliable())),
            "{recorded}"
        );
        let wire = class.to_wire();
        assert!(
            recorded.contains(&format!("delivery: Some({wire:?})")),
            "{class:?}: {recorded}"
        );
    }
    let refused = |options: Arg<Fake>| {
        let recorder = DispatchRecorder::<usize>::new(Dialect::Js);
        argument(recorder.broadcast(&options_only(options), false))
    };
    assert_eq!(
        refused(object(&[("class", text("sideways"))])),
        (
            5,
            "unknown delivery class 'sideways'; expected one of reliable_ordered, reliable_unordered, unreliable, unreliable_latest".to_owned()
        )
    );
    assert_eq!(
        refused(object(&[])).1,
        "expects delivery options with a class: reliable_ordered, reliable_unordered, unreliable, unreliable_latest"
    );
    assert_eq!(
        refused(object(&[
            ("class", text("unreliable")),
            ("lane", text("x"))
        ]))
        .1,
        "a delivery lane applies only to the reliable_ordered and unreliable_latest classes"
    );
    assert_eq!(
        refused(object(&[
            ("class", text("unreliable_latest")),
            ("lane", Arg::Integer(3))
        ]))
        .1,
        "expects the delivery lane to be a string"
    );
}

#[test]
fn callbacks_have_each_dialects_names() {
    assert_eq!(Callback::Loop.name(Dialect::Lua), "match_loop");
    assert_eq!(Callback::JoinAttempt.name(Dialect::Js), "matchJoinAttempt");
    let error = handler_error(
        Dialect::Js,
        Callback::Signal,
        crate::error::ScriptError::Raised {
            code: metafi_proto::Code::Internal,
            message: "boom".into(),
        },
    );
    assert_eq!(error.to_string(), "error in matchSignal: boom");
}
