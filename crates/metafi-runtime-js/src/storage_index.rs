//! `initializer.registerStorageIndex(name, collection, key, fields, sortableFields,
//! maxEntries, indexOnly?)` and `initializer.registerStorageIndexFilter(name, fn)`, with the
//! argument errors of Nakama's `runtime_javascript_init.go`. Indexes are created by the host
//! once every runtime loaded; a filter is stored like a hook under its reserved id and called
//! as Nakama calls it: `fn(ctx, logger, nk, write)` returning a boolean (or a promise of one).

use metafi_core::storage_index::IndexDefinition;
use metafi_runtime::host::RegisteredIndex;
use metafi_runtime::storage_indexes::filter_key;
use rquickjs::function::Rest;
use rquickjs::{Ctx, Exception, Function, Object, Value};

use crate::convert;
use crate::hooks::store;
use crate::initializer::loading_module;
use crate::vm::Shared;

use std::rc::Rc;

/// Answers the host's protocol: `"true"`, `"false"`, `""` (nothing returned), `"?"` (not a
/// boolean).
const FILTER: &str = "(function (fn) { return function (ctx, logger, nk, payload) { var out = function (r) { return r === true ? 'true' : r === false ? 'false' : r == null ? '' : '?'; }; var r = fn(ctx, logger, nk, JSON.parse(payload)); return r instanceof Promise ? r.then(out) : out(r); }; })";

pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    shared: &Rc<Shared>,
    initializer: &Object<'js>,
) -> rquickjs::Result<()> {
    let on = shared.clone();
    let register = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
        register_index(&ctx, &on, &args.0)
    })?
    .with_name("registerStorageIndex")?;
    initializer.set("registerStorageIndex", register)?;
    let on = shared.clone();
    let register = Function::new(ctx.clone(), move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
        let name = convert::arg(&args.0, 0)
            .and_then(convert::string)
            .filter(|n| !n.is_empty())
            .ok_or_else(|| Exception::throw_type(&ctx, "expects a non empty string"))?;
        let f = convert::arg(&args.0, 1)
            .and_then(|f| f.as_function())
            .ok_or_else(|| Exception::throw_type(&ctx, "expects a function"))?
            .clone();
        let module = loading_module(&ctx, &on, "registerStorageIndexFilter")?;
        let wrap: Function<'js> = ctx.eval(FILTER)?;
        let wrapped: Function<'js> = wrap.call((f,))?;
        store(&ctx, &on, filter_key(&name), wrapped, module)
    })?
    .with_name("registerStorageIndexFilter")?;
    initializer.set("registerStorageIndexFilter", register)?;
    Ok(())
}

fn register_index<'js>(
    ctx: &Ctx<'js>,
    shared: &Shared,
    args: &[Value<'js>],
) -> rquickjs::Result<()> {
    let string = |index: usize| {
        convert::arg(args, index)
            .and_then(convert::string)
            .ok_or_else(|| Exception::throw_type(ctx, "expects string"))
    };
    let strings = |index: usize| -> rquickjs::Result<Vec<String>> {
        let value = convert::arg(args, index)
            .filter(|v| !v.is_null())
            .ok_or_else(|| Exception::throw_type(ctx, "expects an array of fields"))?;
        let items = convert::array_items(ctx, value)
            .ok_or_else(|| Exception::throw_type(ctx, "expects an array of strings"))??;
        items
            .iter()
            .map(|item| {
                convert::string(item)
                    .ok_or_else(|| Exception::throw_type(ctx, "expects an array of strings"))
            })
            .collect()
    };
    let name = string(0)?;
    let collection = string(1)?;
    let key = match convert::arg(args, 2).filter(|v| !v.is_null()) {
        Some(_) => string(2)?,
        None => String::new(),
    };
    let fields = strings(3)?;
    let sortable_fields = strings(4)?;
    let max_entries = convert::arg(args, 5)
        .and_then(convert::integer)
        .ok_or_else(|| Exception::throw_type(ctx, "expects number"))?;
    let index_only = match convert::arg(args, 6).filter(|v| !v.is_null()) {
        None => false,
        Some(v) => v
            .as_bool()
            .ok_or_else(|| Exception::throw_type(ctx, "expects boolean"))?,
    };
    let module = loading_module(ctx, shared, "registerStorageIndex")?;
    let definition = IndexDefinition {
        name,
        collection,
        key,
        fields,
        sortable_fields,
        max_entries,
        index_only,
    };
    let mut problem = definition.check().err();
    let mut registered = shared.storage_indexes.borrow_mut();
    if problem.is_none()
        && registered
            .iter()
            .any(|r| r.definition.name == definition.name)
    {
        problem = Some(format!(
            "cannot create index: index with name {:?} already exists",
            definition.name
        ));
    }
    if let Some(problem) = problem {
        return Err(Exception::throw_message(
            ctx,
            &format!("Failed to register storage index: {problem}"),
        ));
    }
    registered.push(RegisteredIndex { definition, module });
    Ok(())
}
