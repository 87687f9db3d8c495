//! The values a JavaScript match exchanges with the host on every tick, made and read through
//! QuickJS's C API: `matchLoop`'s `messages`, a presence object, the context fields set before
//! each callback, and the binary data the dispatcher is given.
//!
//! The objects are the ones rquickjs's safe API made (`Object::new` and a `set` per field):
//! the same keys in the same order, each property *set* (`JS_SetProperty`, as `Object::set`
//! and Nakama's goja `Set` do), the same values (numbers through `JS_NewFloat64` as rquickjs
//! converts an `f64`, an empty payload `null`). What changes is the cost: each key's atom is
//! made once per VM ([`MatchValues`]: rquickjs made one from the text for every `set`), an
//! object is made with its properties in one call (`JS_NewObjectFrom`), the list in one
//! (`JS_NewArrayFrom`: no `set` per element), a uuid is written into a stack buffer (no
//! `String`), and the shapes of a message and a presence are kept per VM
//! ([`FieldNames::keep_shapes_of`]): QuickJS frees a shape with the last object that has it, so
//! every tick made the chain of shapes again when its messages were freed. Binary data is
//! read from the `ArrayBuffer` or `Uint8Array` directly ([`bytes`]) instead of through a
//! JavaScript function that made a Latin-1 string of it.

// Every value made here is handed to its parent (`JS_NewObjectFrom` and `JS_NewArrayFrom` take
// their values, also on failure), to the caller, or freed; each unsafe block works on the
// live context it was given.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::CStr;

use metafi_match::{MatchMessage, Presence, PresenceReason};
use rquickjs::{Ctx, Object, Value, qjs};

use crate::binary::{self, View};
use crate::hook_value::FieldNames;

/// The keys, in the order of [`Key`].
const KEYS: [&CStr; 13] = [
    c"sender",
    c"opCode",
    c"data",
    c"reliable",
    c"receiveTimeMs",
    c"userId",
    c"sessionId",
    c"username",
    c"node",
    c"reason",
    c"matchSize",
    c"matchPendingJoins",
    c"matchLabel",
];

/// Indexes into [`KEYS`].
const USER_ID: usize = 5;
const MATCH_SIZE: usize = 10;
const MATCH_PENDING_JOINS: usize = 11;
const MATCH_LABEL: usize = 12;

/// A message's keys: the first five of [`KEYS`], in Nakama's order.
const MESSAGE: std::ops::Range<usize> = 0..5;
/// A presence's keys (`reason` only in `matchJoin` and `matchLeave`).
const PRESENCE: std::ops::Range<usize> = 5..9;

/// What the match values of one VM share: the keys' atoms (one reference each, made on first
/// use) and whether the message's and presence's shapes are kept. [`MatchValues::release`]
/// drops the atoms before the VM's context goes.
#[derive(Default)]
pub(crate) struct MatchValues {
    atoms: Cell<Option<[qjs::JSAtom; KEYS.len()]>>,
    shapes_kept: Cell<bool>,
}

/// What `matchLoop` is told about one message's sender: the object the match keeps for a
/// member, or nothing (a new presence object is made, as Nakama makes one per message).
pub(crate) type Sender<'js> = Option<Object<'js>>;

impl MatchValues {
    /// Frees the atoms. Called while the VM's context is alive.
    pub(crate) fn release(&self, ctx: &Ctx<'_>) {
        if let Some(atoms) = self.atoms.take() {
            for atom in atoms {
                // SAFETY: each holds one reference, taken in `atoms`.
                unsafe { qjs::JS_FreeAtom(ctx.as_raw().as_ptr(), atom) };
            }
        }
        self.shapes_kept.set(false);
    }

    /// `matchLoop`'s `messages`: an array of `{ sender, opCode, data, reliable,
    /// receiveTimeMs }`, `data` an `ArrayBuffer` of the payload (`null` when empty), `sender`
    /// what `sender` answers for the message or a new presence object.
    pub(crate) fn messages<'js>(
        &self,
        ctx: &Ctx<'js>,
        names: &FieldNames,
        messages: &[MatchMessage],
        mut sender: impl FnMut(&MatchMessage) -> rquickjs::Result<Sender<'js>>,
    ) -> rquickjs::Result<Value<'js>> {
        let raw = ctx.as_raw().as_ptr();
        let atoms = self.atoms(raw, names)?;
        let mut items = Values::new(raw, messages.len());
        for m in messages {
            let presence = match sender(m)? {
                // SAFETY: a live value of `ctx`; the reference taken goes to the message.
                Some(object) => unsafe { qjs::JS_DupValue(raw, object.as_raw()) },
                // SAFETY: `raw` is live; the atoms are this VM's.
                None => unsafe { presence(raw, &atoms, &m.sender, None) },
            };
            // SAFETY: `raw` is live; every value is handed to `JS_NewObjectFrom`.
            let message = unsafe {
                if qjs::JS_IsException(presence) {
                    return Err(rquickjs::Error::Exception);
                }
                let data = if m.data.is_empty() {
                    qjs::JS_NULL
                } else {
                    qjs::JS_NewArrayBufferCopy(raw, m.data.as_ptr(), m.data.len() as _)
                };
                if qjs::JS_IsException(data) {
                    qjs::JS_FreeValue(raw, presence);
                    return Err(rquickjs::Error::Exception);
                }
                let values = [
                    presence,
                    qjs::JS_NewFloat64(m.op_code as f64),
                    data,
                    if m.reliable {
                        qjs::JS_TRUE
                    } else {
                        qjs::JS_FALSE
                    },
                    qjs::JS_NewFloat64(m.receive_time_ms as f64),
                ];
                new_object(raw, &atoms[MESSAGE], &values)
            }?;
            items.push(message);
        }
        items.into_array(ctx)
    }

    /// A presence object: `userId`, `sessionId`, `username`, `node`, and `reason` when given
    /// (the number of Nakama's `PresenceReason`).
    pub(crate) fn presence<'js>(
        &self,
        ctx: &Ctx<'js>,
        names: &FieldNames,
        p: &Presence,
        reason: Option<PresenceReason>,
    ) -> rquickjs::Result<Object<'js>> {
        let raw = ctx.as_raw().as_ptr();
        let atoms = self.atoms(raw, names)?;
        // SAFETY: `raw` is live; the atoms are this VM's.
        let value = unsafe { presence(raw, &atoms, p, reason) };
        // SAFETY: an owned value of `ctx` or the exception marker.
        unsafe {
            if qjs::JS_IsException(value) {
                return Err(rquickjs::Error::Exception);
            }
            Value::from_raw(ctx.clone(), value)
                .into_object()
                .ok_or(rquickjs::Error::Exception)
        }
    }

    /// Sets `matchSize`, `matchPendingJoins` and, when given, `matchLabel` on a match's `ctx`
    /// (as `Object::set` did: a setter a script put there runs).
    pub(crate) fn set_context(
        &self,
        ctx: &Ctx<'_>,
        names: &FieldNames,
        match_ctx: &Object<'_>,
        size: usize,
        pending_joins: usize,
        label: Option<&str>,
    ) -> rquickjs::Result<()> {
        let raw = ctx.as_raw().as_ptr();
        let atoms = self.atoms(raw, names)?;
        let object = match_ctx.as_raw();
        // SAFETY: `raw` is live; `JS_SetProperty` takes the value, also on failure.
        unsafe {
            for (key, value) in [
                (MATCH_SIZE, number(size as i64)),
                (MATCH_PENDING_JOINS, number(pending_joins as i64)),
            ] {
                if qjs::JS_SetProperty(raw, object, atoms[key], value) < 0 {
                    return Err(rquickjs::Error::Exception);
                }
            }
            if let Some(label) = label {
                let value = qjs::JS_NewStringLen(raw, label.as_ptr().cast(), label.len() as _);
                if qjs::JS_IsException(value)
                    || qjs::JS_SetProperty(raw, object, atoms[MATCH_LABEL], value) < 0
                {
                    return Err(rquickjs::Error::Exception);
                }
            }
        }
        Ok(())
    }

    /// The atoms of [`KEYS`], made once; on their first use the shapes of a message and a
    /// presence are kept too.
    fn atoms(
        &self,
        ctx: *mut qjs::JSContext,
        names: &FieldNames,
    ) -> rquickjs::Result<[qjs::JSAtom; KEYS.len()]> {
        if let Some(atoms) = self.atoms.get() {
            return Ok(atoms);
        }
        // SAFETY: `ctx` is live.
        let atoms =
            unsafe { crate::context::new_atoms(ctx, &KEYS) }.ok_or(rquickjs::Error::Exception)?;
        self.atoms.set(Some(atoms));
        if !self.shapes_kept.replace(true) {
            // SAFETY: `ctx` is live; the atoms are held until `release`, after the kept
            // objects (which hold them through their shapes anyway).
            unsafe {
                names.keep_shapes_of(ctx, None, &atoms[MESSAGE]);
                names.keep_shapes_of(ctx, None, &atoms[PRESENCE]);
            }
        }
        Ok(atoms)
    }
}

/// The address of an object (of any value with a pointer): how the match handler knows the
/// presence objects it keeps (`js_match_handler`'s `Recorder`).
pub(crate) fn address(value: &Value<'_>) -> usize {
    // SAFETY: reads the pointer field of a value of a live context; nothing is dereferenced.
    unsafe { qjs::JS_VALUE_GET_PTR(value.as_raw()) as usize }
}

/// Binary data passed to the dispatcher: the bytes of an `ArrayBuffer` (or `SharedArrayBuffer`)
/// or of a `Uint8Array`'s view; `None` for any other value and for a detached buffer (which
/// was not taken as one before either). A view of a detached or shrunk buffer reads as no
/// bytes, as `new Uint8Array(view)` did.
pub(crate) fn bytes(value: &Value<'_>) -> Option<bytes::Bytes> {
    let ctx = value.ctx();
    if binary::is_uint8_array(value.as_raw()) {
        return Some(match binary::view(ctx, value.as_raw()) {
            View::Bytes(bytes) => bytes.into(),
            View::None | View::OutOfBounds => {
                // QuickJS's TypeError for the view, taken: no bytes, as before.
                ctx.catch();
                bytes::Bytes::new()
            }
        });
    }
    binary::buffer(ctx, value.as_raw()).map(bytes::Bytes::from)
}

/// A number as rquickjs converts an `i64`: an integer when it fits 32 bits, else a double.
fn number(n: i64) -> qjs::JSValue {
    match i32::try_from(n) {
        Ok(n) => qjs::JS_MKVAL(qjs::JS_TAG_INT, n),
        Err(_) => qjs::JS_NewFloat64(n as f64),
    }
}

/// A new presence object (`JS_EXCEPTION` with the exception pending on failure).
unsafe fn presence(
    ctx: *mut qjs::JSContext,
    atoms: &[qjs::JSAtom; KEYS.len()],
    p: &Presence,
    reason: Option<PresenceReason>,
) -> qjs::JSValue {
    let mut buffer = uuid::Uuid::encode_buffer();
    // SAFETY (for the block): `ctx` is live; each string made is handed to
    // `JS_NewObjectFrom` or freed.
    unsafe {
        let user_id = new_string(ctx, p.user_id.hyphenated().encode_lower(&mut buffer));
        let session_id = new_string(ctx, p.session_id.hyphenated().encode_lower(&mut buffer));
        let username = new_string(ctx, &p.username);
        let node = new_string(ctx, &p.node);
        let mut values = [user_id, session_id, username, node, qjs::JS_UNDEFINED];
        let mut count = PRESENCE.len();
        if let Some(reason) = reason {
            values[count] = qjs::JS_MKVAL(qjs::JS_TAG_INT, reason as i32);
            count += 1;
        }
        if values.iter().any(|&v| qjs::JS_IsException(v)) {
            for value in values {
                qjs::JS_FreeValue(ctx, value);
            }
            return qjs::JS_EXCEPTION;
        }
        match new_object(ctx, &atoms[USER_ID..USER_ID + count], &values[..count]) {
            Ok(object) => object,
            Err(_) => qjs::JS_EXCEPTION,
        }
    }
}

/// A new object with `values` set under `atoms` in order, as `JS_NewObjectFrom` makes it; takes
/// the values, also on failure.
unsafe fn new_object(
    ctx: *mut qjs::JSContext,
    atoms: &[qjs::JSAtom],
    values: &[qjs::JSValue],
) -> rquickjs::Result<qjs::JSValue> {
    debug_assert_eq!(atoms.len(), values.len());
    // SAFETY: `ctx` is live; `values.len()` atoms and values; the values are taken.
    let object =
        unsafe { qjs::JS_NewObjectFrom(ctx, values.len() as _, atoms.as_ptr(), values.as_ptr()) };
    if unsafe { qjs::JS_IsException(object) } {
        return Err(rquickjs::Error::Exception);
    }
    Ok(object)
}

/// `text` as a new string of `ctx` (`JS_EXCEPTION` with the exception pending on failure).
unsafe fn new_string(ctx: *mut qjs::JSContext, text: &str) -> qjs::JSValue {
    // SAFETY: the context is live; valid UTF-8 of `text.len()` bytes.
    unsafe { qjs::JS_NewStringLen(ctx, text.as_ptr().cast(), text.len() as _) }
}

/// Values made for an array, freed unless handed to it.
struct Values {
    ctx: *mut qjs::JSContext,
    values: Vec<qjs::JSValue>,
}

impl Values {
    fn new(ctx: *mut qjs::JSContext, capacity: usize) -> Values {
        Values {
            ctx,
            values: Vec::with_capacity(capacity),
        }
    }

    fn push(&mut self, value: qjs::JSValue) {
        self.values.push(value);
    }

    /// The array of the values, in order (`JS_NewArrayFrom` takes them, also on failure).
    fn into_array<'js>(mut self, ctx: &Ctx<'js>) -> rquickjs::Result<Value<'js>> {
        let values = std::mem::take(&mut self.values);
        // SAFETY: `self.ctx` is `ctx`'s live context; the values are taken.
        unsafe {
            let array = qjs::JS_NewArrayFrom(self.ctx, values.len() as _, values.as_ptr());
            if qjs::JS_IsException(array) {
                return Err(rquickjs::Error::Exception);
            }
            Ok(Value::from_raw(ctx.clone(), array))
        }
    }
}

impl Drop for Values {
    fn drop(&mut self) {
        for &value in &self.values {
            // SAFETY: the one reference this holds on each value not handed on.
            unsafe { qjs::JS_FreeValue(self.ctx, value) };
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use bytes::Bytes;
    use rquickjs::{Context, Function, Runtime};
    use uuid::Uuid;

    use super::*;

    fn presence(user: u128, session: u128, name: &str) -> Arc<Presence> {
        Arc::new(Presence {
            user_id: Uuid::from_u128(user),
            session_id: Uuid::from_u128(session),
            username: Arc::from(name),
            node: Arc::from("node1"),
        })
    }

    /// A member's message with data, a non-member's with none (op code past 32 bits).
    fn messages(member: &Arc<Presence>) -> Vec<MatchMessage> {
        vec![
            MatchMessage {
                sender: member.clone(),
                op_code: 1,
                data: Bytes::from_static(&[104, 105, 0, 255]),
                reliable: true,
                receive_time_ms: 1_764_295_200_123,
            },
            MatchMessage {
                sender: presence(0xa, 0xb, "ghost"),
                op_code: 1 << 40,
                data: Bytes::new(),
                reliable: false,
                receive_time_ms: 7,
            },
        ]
    }

    /// The list as rquickjs's safe API made it before (`Object::new`, a `set` per field, the
    /// uuids as `String`s, `Array::set` per element): what `messages` must still make.
    fn safe_api<'js>(
        ctx: &Ctx<'js>,
        member: &Object<'js>,
        list: &[MatchMessage],
    ) -> rquickjs::Result<Value<'js>> {
        let array = rquickjs::Array::new(ctx.clone())?;
        for (i, m) in list.iter().enumerate() {
            let message = Object::new(ctx.clone())?;
            let sender = if i == 0 {
                member.clone()
            } else {
                let p = &m.sender;
                let object = Object::new(ctx.clone())?;
                object.set("userId", p.user_id.to_string())?;
                object.set("sessionId", p.session_id.to_string())?;
                object.set("username", &*p.username)?;
                object.set("node", &*p.node)?;
                object
            };
            message.set("sender", sender)?;
            message.set("opCode", m.op_code as f64)?;
            if m.data.is_empty() {
                message.set("data", Value::new_null(ctx.clone()))?;
            } else {
                message.set(
                    "data",
                    rquickjs::ArrayBuffer::new_copy(ctx.clone(), &m.data[..])?,
                )?;
            }
            message.set("reliable", m.reliable)?;
            message.set("receiveTimeMs", m.receive_time_ms as f64)?;
            array.set(i, message)?;
        }
        Ok(array.into_value())
    }

    /// Runs `f` on a fresh VM with a `MatchValues` and its `FieldNames`, released before the
    /// runtime goes (QuickJS aborts on objects that outlive it).
    fn with_vm<T>(f: impl FnOnce(&Ctx<'_>, &MatchValues, &FieldNames) -> T) -> T {
        let runtime = Runtime::new().unwrap();
        let context = Context::full(&runtime).unwrap();
        let values = MatchValues::default();
        let names = FieldNames::default();
        let out = context.with(|ctx| f(&ctx, &values, &names));
        context.with(|ctx| {
            values.release(&ctx);
            names.release(&ctx);
        });
        out
    }

    #[test]
    fn match_loop_messages_are_nakamas_objects_in_order_and_as_the_safe_api_made_them() {
        let member = presence(1, 2, "alice");
        let list = messages(&member);
        let (new, old, checks) = with_vm(|ctx, values, names| {
            let show: Function<'_> = ctx.eval(crate::test_support::SHOW).unwrap();
            let kept = values.presence(ctx, names, &member, None).unwrap();
            let sender = |m: &MatchMessage| {
                Ok((m.sender.session_id == member.session_id).then(|| kept.clone()))
            };
            let built = values.messages(ctx, names, &list, sender).unwrap();
            let again = values.messages(ctx, names, &list, sender).unwrap();
            let old = safe_api(ctx, &kept, &list).unwrap();
            let check: Function<'_> = ctx
                .eval(
                    "(function (a, b, kept) { return [a[0].sender === kept, a[1].sender !== b[1].sender, \
                     typeof a[0].opCode, typeof a[1].receiveTimeMs, a[0].data instanceof ArrayBuffer, \
                     a[1].data === null].join(); })",
                )
                .unwrap();
            let checks: String = check.call((built.clone(), again, kept)).unwrap();
            let new: String = show.call((built,)).unwrap();
            let old: String = show.call((old,)).unwrap();
            (new, old, checks)
        });
        let alice = r#"{"userId"wec=string:00000000-0000-0000-0000-000000000001,"sessionId"wec=string:00000000-0000-0000-0000-000000000002,"username"wec=string:alice,"node"wec=string:node1}"#;
        let ghost = r#"{"userId"wec=string:00000000-0000-0000-0000-00000000000a,"sessionId"wec=string:00000000-0000-0000-0000-00000000000b,"username"wec=string:ghost,"node"wec=string:node1}"#;
        let expected = format!(
            r#"["0"wec={{"sender"wec={alice},"opCode"wec=number:1,"data"wec=ArrayBuffer[104,105,0,255],"reliable"wec=boolean:true,"receiveTimeMs"wec=number:1764295200123}},"1"wec={{"sender"wec={ghost},"opCode"wec=number:1099511627776,"data"wec=object:null,"reliable"wec=boolean:false,"receiveTimeMs"wec=number:7}},"length"w=number:2]"#
        );
        assert_eq!(new, expected);
        assert_eq!(new, old, "the safe API's objects");
        // The member's kept object is passed as is; a non-member gets a new one per message.
        assert_eq!(checks, "true,true,number,number,true,true");
    }

    #[test]
    fn presences_of_join_and_leave_carry_the_reason_last() {
        let shown = with_vm(|ctx, values, names| {
            let show: Function<'_> = ctx.eval(crate::test_support::SHOW).unwrap();
            let object = values
                .presence(
                    ctx,
                    names,
                    &presence(3, 4, "bob"),
                    Some(PresenceReason::Leave),
                )
                .unwrap();
            show.call::<_, String>((object,)).unwrap()
        });
        assert_eq!(
            shown,
            r#"{"userId"wec=string:00000000-0000-0000-0000-000000000003,"sessionId"wec=string:00000000-0000-0000-0000-000000000004,"username"wec=string:bob,"node"wec=string:node1,"reason"wec=number:3}"#
        );
    }

    #[test]
    fn dispatcher_data_is_read_from_buffers_and_uint8_views_only() {
        let read = with_vm(|ctx, _, _| {
            let values: rquickjs::Array<'_> = ctx
                .eval(
                    "var b = new Uint8Array([1, 2, 3, 4, 5]); \
                     [b.buffer, b.subarray(1, 3), new Uint8Array(0), {}, [1, 2], \
                      new Uint16Array([1]), 'text', new SharedArrayBuffer(2)]",
                )
                .unwrap();
            values
                .iter::<Value<'_>>()
                .map(|v| bytes(&v.unwrap()).map(|b| b.to_vec()))
                .collect::<Vec<_>>()
        });
        assert_eq!(
            read,
            [
                Some(vec![1, 2, 3, 4, 5]),
                Some(vec![2, 3]),
                Some(vec![]),
                None,
                None,
                None,
                None,
                Some(vec![0, 0]),
            ]
        );
    }
}
