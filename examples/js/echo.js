// The seed benchmark's JavaScript echo: decode the payload as JSON and encode it back with
// object keys sorted, as the Lua and native echoes (and Go's encoding/json) write them.
// A payload that is not JSON (an empty one included) is answered with code 3
// (INVALID_ARGUMENT) and the message "payload is not valid JSON", word for word the same as
// the Lua and native echoes, whatever the parser said.

function sortKeys(value) {
  if (Array.isArray(value)) {
    return value.map(sortKeys);
  }
  if (value !== null && typeof value === "object") {
    var sorted = {};
    Object.keys(value).sort().forEach(function (key) {
      sorted[key] = sortKeys(value[key]);
    });
    return sorted;
  }
  return value;
}

function echo(ctx, logger, nk, payload) {
  var decoded;
  try {
    decoded = JSON.parse(payload);
  } catch (e) {
    throw { message: "payload is not valid JSON", code: 3 };
  }
  return JSON.stringify(sortKeys(decoded));
}

function InitModule(ctx, logger, nk, initializer) {
  initializer.registerRpc("echo_js", echo);
}
