-- Compatibility-suite fixture (not an example): the caller's wallet changed by server code, as
-- games do it (a purchase, a reward). scripts/compat.sh and scripts/nakama.sh load it beside
-- the examples; tests/compat/wallet.test.mjs drives it.
local nk = require("nakama")

-- Payload {"changeset": {...}, "metadata": {...}}: nk.wallet_update on the caller's wallet,
-- recorded in the ledger. Answers {"updated": ..., "previous": ...}.
local function wallet_update(context, payload)
  local input = nk.json_decode(payload)
  local updated, previous = nk.wallet_update(context.user_id, input.changeset, input.metadata, true)
  return nk.json_encode({ updated = updated, previous = previous })
end

-- Payload {"limit": n, "cursor": "..."}: a page of the caller's ledger, newest first.
local function wallet_ledger(context, payload)
  local input = nk.json_decode(payload)
  local items, cursor = nk.wallet_ledger_list(context.user_id, input.limit or 100, input.cursor or "")
  local changesets = {}
  for i, item in ipairs(items) do
    changesets[i] = { changeset = item.changeset, metadata = item.metadata, user_id = item.user_id }
  end
  return nk.json_encode({ items = changesets, cursor = cursor })
end

-- The caller's wallet and a storage object in one transaction; `spend` may overdraw, and then
-- nothing is written.
local function wallet_purchase(context, payload)
  local input = nk.json_decode(payload)
  local writes = {
    { collection = "compat_purchases", key = input.item, user_id = context.user_id, value = { bought = true } },
  }
  local wallets = { { user_id = context.user_id, changeset = { coins = -input.price } } }
  local acks, results = nk.multi_update(nil, writes, nil, wallets, true)
  return nk.json_encode({ version = acks[1].version, updated = results[1].updated })
end

nk.register_rpc(wallet_update, "compat_wallet_update")
nk.register_rpc(wallet_ledger, "compat_wallet_ledger")
nk.register_rpc(wallet_purchase, "compat_wallet_purchase")
