// A served world (MetaFi only; docs/WORLD.md, "Serving the world") through nakama-js: server
// code creates a world (nk.world_create in tests/compat/modules/lua/compat_world.lua), the
// client finds it in the match listing, joins it with joinMatch, sends moves as match data
// (op 1: seq, ack, command) and sees itself move in its snapshots (op 2). The snapshots are
// decoded here by a small decoder of the world codec's header and the player's own view (the
// entity records after it are not needed to see oneself); each is a delta against the
// newest tick the client acknowledged, so the decoder keeps the views it decoded by tick.
import { test } from "node:test";
import assert from "node:assert/strict";
import WebSocket from "ws";
import { WebSocketAdapterText } from "@heroiclabs/nakama-js";
import { WebSocketAdapterPb } from "@heroiclabs/nakama-js-protobuf";
import { client, freshDeviceId, metafiOnly, recordEvents } from "./support.mjs";

globalThis.WebSocket = WebSocket;

const OP_COMMAND = 1;
const OP_SNAPSHOT = 2;
const OP_WELCOME = 3;

/** LEB128 reader over a Uint8Array. */
class Reader {
  constructor(bytes) {
    this.bytes = bytes;
    this.pos = 0;
  }
  byte() {
    if (this.pos >= this.bytes.length) throw new Error("truncated");
    return this.bytes[this.pos++];
  }
  varint() {
    let v = 0;
    for (let shift = 0; shift < 35; shift += 7) {
      const b = this.byte();
      v += (b & 0x7f) * 2 ** shift;
      if ((b & 0x80) === 0) return v;
    }
    throw new Error("bad varint");
  }
  /** A zigzag delta against `old` (wrapping i32 arithmetic). */
  delta(old) {
    const z = this.varint();
    const d = z % 2 === 0 ? z / 2 : -(z + 1) / 2;
    return (old + d) | 0;
  }
}

function varint(out, v) {
  while (v >= 0x80) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
}
const zz = (v) => (v >= 0 ? v * 2 : -v * 2 - 1);

/** Op 1: seq, ack + 1 (0: none), msec, yaw, pitch, forward, side, up, buttons, weapon. */
function command(seq, ack, forward) {
  const out = [];
  varint(out, seq);
  varint(out, ack === undefined ? 0 : ack + 1);
  out.push(50);
  varint(out, 0);
  varint(out, zz(0));
  varint(out, zz(forward));
  varint(out, zz(0));
  varint(out, zz(0));
  out.push(0, 0);
  return new Uint8Array(out);
}

const ZERO_VIEW = { origin: [0, 0, 0], velocity: [0, 0, 0], yaw: 0, pitch: 0, health: 0, ammo: [0, 0], weapon: 0, flags: 0, frags: 0, deaths: 0 };

/**
 * Op 2: applied command seq, then the snapshot packet: tick, back (0: full; else the baseline is
 * tick - back), the view mask and the view fields as deltas against the baseline's view.
 */
function decodeSnapshot(bytes, views) {
  const r = new Reader(bytes);
  const applied = r.varint();
  const tick = r.varint();
  const back = r.varint();
  const base = back === 0 ? ZERO_VIEW : views.get(tick - back);
  if (!base) throw new Error(`snapshot ${tick} against tick ${tick - back}, which was never acknowledged`);
  const v = structuredClone(base);
  const mask = r.byte();
  if (mask & 1) v.origin = base.origin.map((o) => r.delta(o));
  if (mask & 2) v.velocity = base.velocity.map((o) => r.delta(o));
  if (mask & 4) {
    v.yaw = r.delta((base.yaw << 16) >> 16) & 0xffff;
    v.pitch = r.delta(base.pitch);
  }
  if (mask & 8) v.health = r.delta(base.health);
  if (mask & 16) v.ammo = base.ammo.map((o) => r.delta(o));
  if (mask & 32) {
    v.weapon = r.byte();
    v.flags = r.byte();
  }
  if (mask & 64) {
    v.frags = r.delta(base.frags);
    v.deaths = r.delta(base.deaths);
  }
  return { applied, tick, back, view: v };
}

for (const format of ["json", "protobuf"]) {
  test(`world (${format}): a nakama-js client joins, moves and sees itself in its snapshots`, metafiOnly("served worlds"), async (t) => {
    const c = client();
    const session = await c.authenticateDevice(freshDeviceId(), true);
    const socket = c.createSocket(false, false, format === "json" ? new WebSocketAdapterText() : new WebSocketAdapterPb());
    const events = recordEvents(socket, ["onmatchdata"]);
    await socket.connect(session, false);
    t.after(() => socket.disconnect(false));

    // nakama-js hands an RPC's JSON answer over parsed.
    const created = (await c.rpc(session, "compat_world_create", {})).payload;
    const listed = await c.listMatches(session, 100, true);
    const world = listed.matches.find((m) => m.match_id === created.match_id);
    assert.ok(world, "the world is listed");
    const label = JSON.parse(world.label);
    assert.equal(label.world, true);
    assert.equal(label.map, "arena");
    assert.equal(label.max_players, 4);

    const joined = await socket.joinMatch(created.match_id);
    assert.equal(joined.match_id, created.match_id);
    assert.equal(joined.authoritative, true);

    const welcome = await events.next("onmatchdata", (d) => d.op_code === OP_WELCOME);
    const hello = JSON.parse(new TextDecoder().decode(welcome.data));
    assert.equal(hello.map, "arena");
    assert.equal(hello.tick_rate, 20);

    const views = new Map();
    let acked;
    let seq = 0;
    let first;
    let last;
    let deltas = 0;
    for (let i = 0; i < 40; i++) {
      const data = await events.next("onmatchdata", (d) => d.op_code === OP_SNAPSHOT);
      const snap = decodeSnapshot(data.data, views);
      if (snap.back !== 0) deltas++;
      views.set(snap.tick, snap.view);
      acked = snap.tick;
      first ??= snap;
      last = snap;
      seq++;
      await socket.sendMatchState(created.match_id, OP_COMMAND, command(seq, acked, 320));
    }
    assert.ok(deltas > 0, "snapshots are deltas against acknowledged ticks");
    assert.ok(last.applied > 0, "commands were applied");
    assert.equal(last.view.health > 0, true);
    const dx = last.view.origin[0] - first.view.origin[0];
    const dy = last.view.origin[1] - first.view.origin[1];
    // Quantized to 1/8 unit: running forward for ~2 s moves far unless a wall stops the
    // player at once; 16 units either way is enough to see it move.
    assert.ok(Math.hypot(dx, dy) / 8 > 16, `moved ${Math.hypot(dx, dy) / 8} units`);
  });
}
