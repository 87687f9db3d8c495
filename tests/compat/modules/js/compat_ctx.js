// Compatibility-suite fixture (not an example): what JavaScript server code sees of its `ctx`
// and `logger` in an RPC (over REST and over the socket), a before and an after hook of
// AuthenticateCustom and a realtime before hook of StatusUpdate, pinned against a real Nakama
// by ctx.test.mjs. The hooks act only on inputs marked "ctxprobe", so the rest of the suite is
// unaffected. Modules share one global scope (as a Nakama bundle does): names are prefixed.

// The keys of `ctx` in order, the values that do not change between calls, and the types of
// the others; whether the trace id is a random UUID and the port a decimal number, as text;
// the caller's identity (for the test to compare with its session token); the logger's keys,
// which of Nakama's methods it has, and its `fields`.
function compatCtxSeen(ctx, logger) {
  var stable = { executionMode: 1, headers: 1, queryParams: 1, env: 1, vars: 1, lang: 1 };
  var values = {};
  Object.keys(ctx).forEach(function (key) {
    values[key] = stable[key] ? ctx[key] : typeof ctx[key];
  });
  return {
    keys: Object.keys(ctx),
    values: values,
    traceIdIsUuid: /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(ctx.traceId),
    clientPortIsDecimal: /^[1-9][0-9]*$/.test(ctx.clientPort),
    identity: { userId: ctx.userId, username: ctx.username, userSessionExp: ctx.userSessionExp },
    loggerKeys: Object.keys(logger).sort(),
    loggerFunctions: ["debug", "error", "getFields", "info", "warn", "withField", "withFields"].filter(
      function (name) { return typeof logger[name] === "function"; }),
    getFieldsIsFields: typeof logger.getFields === "function" && logger.getFields() === logger.fields,
    loggerFields: logger.fields,
  };
}

function compatCtxRpc(ctx, logger, nk, payload) {
  return JSON.stringify(compatCtxSeen(ctx, logger));
}

function compatCtxBeforeCustom(ctx, logger, nk, data) {
  if (data.account.id.indexOf("ctxprobe-before") === 0) {
    throw { message: JSON.stringify(compatCtxSeen(ctx, logger)), code: 3 };
  }
  return data;
}

// An after hook cannot change the answer: it leaves what it saw in the local cache, under the
// custom id, for compat_ctx_after to hand out.
function compatCtxAfterCustom(ctx, logger, nk, data, request) {
  if (request.account.id.indexOf("ctxprobe-after") === 0) {
    nk.localcachePut("compat_ctx:" + request.account.id, JSON.stringify(compatCtxSeen(ctx, logger)));
  }
}

function compatCtxAfterSeen(ctx, logger, nk, payload) {
  return nk.localcacheGet("compat_ctx:" + JSON.parse(payload).id) || "";
}

function compatCtxBeforeStatusUpdate(ctx, logger, nk, envelope) {
  var status = envelope.statusUpdate && envelope.statusUpdate.status;
  if (typeof status === "string" && status.indexOf("ctxprobe") === 0) {
    throw { message: JSON.stringify(compatCtxSeen(ctx, logger)), code: 3 };
  }
  return envelope;
}

function InitModule(ctx, logger, nk, initializer) {
  initializer.registerRpc("compat_ctx_js", compatCtxRpc);
  initializer.registerRpc("compat_ctx_js_after", compatCtxAfterSeen);
  initializer.registerBeforeAuthenticateCustom(compatCtxBeforeCustom);
  initializer.registerAfterAuthenticateCustom(compatCtxAfterCustom);
  initializer.registerRtBefore("StatusUpdate", compatCtxBeforeStatusUpdate);
}
