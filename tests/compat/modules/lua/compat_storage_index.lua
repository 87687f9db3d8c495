-- Compatibility-suite fixture (not an example): a storage index over the collection
-- "compat_levels", as games use one (find objects by their fields). scripts/compat.sh and
-- scripts/nakama.sh load it beside the examples; tests/compat/storage_index.test.mjs drives it.
local nk = require("nakama")

nk.register_storage_index("compat_levels", "compat_levels", "", { "level", "mode" }, { "level" }, 10000, false)

-- Payload {"query": "...", "limit": n, "order": [...], "cursor": "..."}: a page of the index as
-- the caller sees it. Answers {"keys": [...], "levels": [...], "cursor": "..." or absent}.
local function list(context, payload)
  local input = nk.json_decode(payload)
  local objects, cursor = nk.storage_index_list("compat_levels", input.query, input.limit or 100,
    input.order or {}, context.user_id, input.cursor)
  local keys, levels = {}, {}
  for i, object in ipairs(objects) do
    keys[i] = object.key
    levels[i] = object.value.level
  end
  return nk.json_encode({ keys = keys, levels = levels, cursor = cursor })
end

nk.register_rpc(list, "compat_storage_index_list")
