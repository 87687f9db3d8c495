//! Helpers shared by this crate's unit tests.

use mlua::{Function, Lua};

/// A Lua function printing a value with its table keys sorted, so two tables compare by
/// content (`{a=number:1,b={...}}`).
pub(crate) fn show_sorted(lua: &Lua) -> Function {
    lua.load(
        r#"
        local function show(v)
          if type(v) ~= "table" then return type(v) .. ":" .. tostring(v) end
          local keys = {}
          for k in pairs(v) do keys[#keys + 1] = k end
          table.sort(keys, function(a, b) return tostring(a) < tostring(b) end)
          local out = {}
          for _, k in ipairs(keys) do out[#out + 1] = tostring(k) .. "=" .. show(v[k]) end
          return "{" .. table.concat(out, ",") .. "}"
        end
        return show
        "#,
    )
    .eval()
    .expect("the printing function compiles")
}
