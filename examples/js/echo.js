// The seed benchmark's JavaScript echo: decode the payload as JSON and encode it back.
// A payload that is not JSON is answered with code 3 (INVALID_ARGUMENT).

function echo(ctx, logger, nk, payload) {
  var decoded;
  try {
    decoded = JSON.parse(payload);
  } catch (e) {
    throw { message: "payload is not valid JSON: " + e.message, code: 3 };
  }
  return JSON.stringify(decoded);
}

function InitModule(ctx, logger, nk, initializer) {
  initializer.registerRpc("echo_js", echo);
}
