// The realtime counterpart of probe.mjs: sends the same raw envelopes (JSON text frames) to two
// servers, each on a fresh socket of a fresh account, and prints where the first answer (or the
// close) differs. A tool for finding differences, not a test.
//
//   node probe_socket.mjs A_PORT B_PORT
import { randomUUID } from "node:crypto";
import WebSocket from "ws";

const [portA, portB] = process.argv.slice(2);
const basic = "Basic " + Buffer.from("defaultkey:").toString("base64");

async function token(port) {
  const r = await fetch(`http://127.0.0.1:${port}/v2/account/authenticate/device?create=true`, {
    method: "POST",
    headers: { authorization: basic },
    body: JSON.stringify({ id: `sock-${randomUUID()}` }),
  });
  return (await r.json()).token;
}

/** Sends one frame, returns the first frame back (or the close), within 1.5 s. */
async function exchange(port, frame) {
  const ws = new WebSocket(`ws://127.0.0.1:${port}/ws?lang=en&status=false&token=${await token(port)}`);
  await new Promise((resolve, reject) => {
    ws.once("open", resolve);
    ws.once("error", reject);
  });
  return new Promise((resolve) => {
    const done = (v) => {
      clearTimeout(timer);
      ws.terminate();
      resolve(v);
    };
    const timer = setTimeout(() => done("<no answer in 1.5 s>"), 1500);
    ws.on("message", (data) => done(`frame ${data.toString().slice(0, 300)}`));
    ws.on("close", (code, reason) => done(`close ${code} ${reason}`));
    ws.send(frame);
  });
}

const long = "s".repeat(2100);
const cases = [
  ["not JSON", "not json"],
  ["empty envelope", '{"cid":"1"}'],
  ["unknown message", '{"cid":"1","no_such_message":{}}'],
  ["rpc without id", '{"cid":"1","rpc":{}}'],
  ["rpc unknown", '{"cid":"1","rpc":{"id":"nope"}}'],
  ["rpc bad payload (lua)", '{"cid":"1","rpc":{"id":"echo","payload":"{"}}'],
  ["rpc empty payload (native)", '{"cid":"1","rpc":{"id":"echo_native"}}'],
  ["rpc empty payload (js)", '{"cid":"1","rpc":{"id":"echo_js"}}'],
  ["rpc empty payload (lua)", '{"cid":"1","rpc":{"id":"echo"}}'],
  ["ping", '{"cid":"1","ping":{}}'],
  ["channel join empty target", '{"cid":"1","channel_join":{"target":"","type":1}}'],
  ["channel join bad type", '{"cid":"1","channel_join":{"target":"room","type":9}}'],
  ["channel join long room", `{"cid":"1","channel_join":{"target":"${"r".repeat(65)}","type":1}}`],
  ["channel join dm self-invalid", '{"cid":"1","channel_join":{"target":"nope","type":2}}'],
  ["channel send not joined", '{"cid":"1","channel_message_send":{"channel_id":"2...room","content":"{}"}}'],
  ["channel send bad id", '{"cid":"1","channel_message_send":{"channel_id":"nope","content":"{}"}}'],
  ["channel leave never joined", '{"cid":"1","channel_leave":{"channel_id":"2...never"}}'],
  ["channel update missing message", `{"cid":"1","channel_message_update":{"channel_id":"2...room","message_id":"${randomUUID()}","content":"{}"}}`],
  ["match join bad id", '{"cid":"1","match_join":{"match_id":"nope"}}'],
  ["match join missing", `{"cid":"1","match_join":{"match_id":"${randomUUID()}."}}`],
  ["match join missing authoritative", `{"cid":"1","match_join":{"match_id":"${randomUUID()}.nakama"}}`],
  ["match join bad token", '{"cid":"1","match_join":{"token":"garbage"}}'],
  ["match join nothing", '{"cid":"1","match_join":{}}'],
  ["match leave missing", `{"cid":"1","match_leave":{"match_id":"${randomUUID()}."}}`],
  ["match data not joined", `{"cid":"1","match_data_send":{"match_id":"${randomUUID()}.","op_code":"1","data":""}}`],
  ["match create", '{"cid":"1","match_create":{}}'],
  ["match create named", '{"cid":"1","match_create":{"name":"named-room"}}'],
  ["status update long", `{"cid":"1","status_update":{"status":"${long}"}}`],
  ["status update", '{"cid":"1","status_update":{"status":"hi"}}'],
  ["status follow bad id", '{"cid":"1","status_follow":{"user_ids":["nope"]}}'],
  ["status follow unknown user", `{"cid":"1","status_follow":{"user_ids":["${randomUUID()}"]}}`],
  ["status follow empty", '{"cid":"1","status_follow":{}}'],
  ["status unfollow never", `{"cid":"1","status_unfollow":{"user_ids":["${randomUUID()}"]}}`],
  ["matchmaker min 1", '{"cid":"1","matchmaker_add":{"min_count":1,"max_count":1,"query":"*"}}'],
  ["matchmaker min>max", '{"cid":"1","matchmaker_add":{"min_count":4,"max_count":2,"query":"*"}}'],
  ["matchmaker no query", '{"cid":"1","matchmaker_add":{"min_count":2,"max_count":2}}'],
  ["matchmaker bad query", '{"cid":"1","matchmaker_add":{"min_count":2,"max_count":2,"query":"+++"}}'],
  ["matchmaker remove unknown", '{"cid":"1","matchmaker_remove":{"ticket":"nope"}}'],
  ["party create", '{"cid":"1","party_create":{"open":true,"max_size":2}}'],
  ["array", "[1,2]"],
  ["cid number", '{"cid":1,"ping":{}}'],
];

let differences = 0;
for (const [name, frame] of cases) {
  const [a, b] = await Promise.all([exchange(portA, frame), exchange(portB, frame)]);
  const norm = (s) => s.replace(/[0-9a-f]{8}-[0-9a-f-]{27}/g, "<uuid>").replace(/"cid":"1",?/, "");
  if (norm(a) === norm(b)) continue;
  differences++;
  console.log(`\n### ${name}: ${frame.slice(0, 100)}\n  A ${norm(a)}\n  B ${norm(b)}`);
}
console.log(`\n${differences} of ${cases.length} cases differ`);
