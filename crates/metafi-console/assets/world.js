// The console's live top-down view of a world (docs/CONSOLE.md, "Worlds"). Hand-written, no
// framework. Fetches the map once (JSON), then keeps fetching whole-world frames: snapshot
// packets of the world codec (docs/WORLD.md, "Snapshot delta encoding"), each encoded against
// the frame this page already has (`since`), decodes them and draws every player, rocket and
// item on the canvas.
"use strict";
(() => {
  const canvas = document.getElementById("world-canvas");
  if (!canvas) return;
  const id = canvas.dataset.world;
  const ctx = canvas.getContext("2d");
  const KIND_PLAYER = 0, KIND_ROCKET = 1, KIND_ITEM = 2;
  const DEAD = 1, AVAILABLE = 8;
  const COLOURS = { player: "#2563eb", dead: "#b42318", rocket: "#f59e0b", item: "#16a34a", itemTaken: "#bbf7d0" };
  let map = null;
  let background = null;
  let frame = null; // { tick, entities: [{ key, origin: [x, y, z], yaw, pitch, flags, model }] }
  let frames = 0;
  const arrived = [];

  // --- the codec (the same layout metafi_world::delta writes) ---
  class Reader {
    constructor(bytes) { this.b = bytes; this.p = 0; }
    byte() {
      if (this.p >= this.b.length) throw new Error(`packet ends early at byte ${this.p}`);
      return this.b[this.p++];
    }
    varint() {
      let v = 0;
      for (let shift = 0; shift < 35; shift += 7) {
        const b = this.byte();
        v += (b & 0x7f) * 2 ** shift;
        if ((b & 0x80) === 0) return v;
      }
      throw new Error("malformed varint");
    }
    // A zigzag delta applied to `old`, wrapping as a 32-bit integer.
    delta(old) {
      const z = this.varint();
      const d = z % 2 === 0 ? z / 2 : -(z + 1) / 2;
      return (old + d) | 0;
    }
  }
  const i16 = (v) => (v << 16) >> 16;

  function decode(bytes, base) {
    const r = new Reader(bytes);
    const tick = r.varint();
    const back = r.varint();
    if (back !== 0 && (!base || base.tick !== tick - back)) throw new Error("baseline mismatch");
    if (back === 0) base = null;
    // The view (empty for a whole-world frame): skip its fields.
    const mask = r.byte();
    const counts = [3, 3, 2, 1, 2, 0, 2];
    for (let bit = 0; bit < 7; bit++) {
      if ((mask & (1 << bit)) === 0) continue;
      if (bit === 5) { r.byte(); r.byte(); } else for (let k = 0; k < counts[bit]; k++) r.varint();
    }
    const old = base ? base.entities : [];
    const records = r.varint();
    const out = [];
    let prev = -1, i = 0;
    for (let n = 0; n < records; n++) {
      const key = prev + 1 + r.varint();
      prev = key;
      const opMask = r.byte();
      const op = opMask >> 6, fields = opMask & 0x3f;
      while (i < old.length && old[i].key < key) out.push(old[i++]);
      const present = i < old.length && old[i].key === key;
      if (op === 0) { // remove
        if (!present) throw new Error("remove of an absent entity");
        i++;
        continue;
      }
      let from;
      if (op === 2 && present) from = old[i++];
      else if (op === 1 && !present) from = { key, origin: [0, 0, 0], yaw: 0, pitch: 0, flags: 0, model: 0 };
      else throw new Error("bad record op");
      const e = { key, origin: from.origin.slice(), yaw: from.yaw, pitch: from.pitch, flags: from.flags, model: from.model };
      for (let k = 0; k < 3; k++) if (fields & (1 << k)) e.origin[k] = r.delta(from.origin[k]);
      if (fields & 8) { e.yaw = r.delta(i16(from.yaw)) & 0xffff; e.pitch = i16(r.delta(from.pitch)); }
      if (fields & 16) { e.flags = r.byte(); e.model = r.byte(); }
      out.push(e);
    }
    while (i < old.length) out.push(old[i++]);
    if (r.p !== bytes.length) throw new Error("trailing bytes");
    return { tick, entities: out };
  }

  // --- drawing ---
  let scale = 1, offX = 0, offY = 0;
  const toX = (x) => offX + (x - map.bounds.min[0]) * scale;
  // y grows up in the world, down on the canvas.
  const toY = (y) => offY + (map.bounds.max[1] - y) * scale;

  function drawBackground() {
    const w = map.bounds.max[0] - map.bounds.min[0];
    const h = map.bounds.max[1] - map.bounds.min[1];
    scale = Math.min(canvas.width / w, canvas.height / h);
    offX = (canvas.width - w * scale) / 2;
    offY = (canvas.height - h * scale) / 2;
    background = document.createElement("canvas");
    background.width = canvas.width;
    background.height = canvas.height;
    const g = background.getContext("2d");
    g.fillStyle = "#0f172a";
    g.fillRect(0, 0, canvas.width, canvas.height);
    g.fillStyle = "#1e293b";
    g.fillRect(offX, offY, w * scale, h * scale);
    const floor = map.bounds.min[2] + 1;
    for (const [x0, y0, x1, y1, top] of map.brushes) {
      if (top <= 0 && x1 - x0 >= w * 0.5) continue; // the floor slab
      const shade = Math.max(70, Math.min(200, 90 + (top - floor) / 4));
      g.fillStyle = `rgb(${shade}, ${shade}, ${shade + 10})`;
      g.fillRect(toX(x0), toY(y1), Math.max(1, (x1 - x0) * scale), Math.max(1, (y1 - y0) * scale));
    }
  }

  function draw() {
    ctx.drawImage(background, 0, 0);
    if (!frame) return;
    const unit = 1 / 8;
    const r = Math.max(2, 16 * scale);
    let players = 0, rockets = 0, items = 0;
    for (const e of frame.entities) {
      const kind = Math.floor(e.key / 2 ** 30);
      const x = toX(e.origin[0] * unit), y = toY(e.origin[1] * unit);
      if (kind === KIND_PLAYER) {
        players++;
        ctx.fillStyle = e.flags & DEAD ? COLOURS.dead : COLOURS.player;
        ctx.fillRect(x - r, y - r, 2 * r, 2 * r);
        if (r >= 4) { // a facing tick when there is room for one
          const a = (e.yaw / 65536) * 2 * Math.PI;
          ctx.strokeStyle = "#e2e8f0";
          ctx.beginPath();
          ctx.moveTo(x, y);
          ctx.lineTo(x + Math.cos(a) * r * 1.8, y - Math.sin(a) * r * 1.8);
          ctx.stroke();
        }
      } else if (kind === KIND_ROCKET) {
        rockets++;
        ctx.fillStyle = COLOURS.rocket;
        ctx.beginPath();
        ctx.arc(x, y, Math.max(1.5, r * 0.6), 0, 2 * Math.PI);
        ctx.fill();
      } else if (kind === KIND_ITEM) {
        const up = (e.flags & AVAILABLE) !== 0;
        if (up) items++;
        ctx.fillStyle = up ? COLOURS.item : COLOURS.itemTaken;
        ctx.fillRect(x - r * 0.7, y - r * 0.7, r * 1.4, r * 1.4);
      }
    }
    const now = performance.now();
    while (arrived.length && now - arrived[0] > 2000) arrived.shift();
    canvas.dataset.players = players;
    canvas.dataset.rockets = rockets;
    canvas.dataset.tick = frame.tick;
    set("world-players", players);
    set("world-rockets", rockets);
    set("world-items", items);
    set("world-tick", frame.tick);
    set("world-fps", (arrived.length / 2).toFixed(1));
  }

  function set(elementId, text) {
    const el = document.getElementById(elementId);
    if (el) el.textContent = String(text);
  }

  // --- the feed ---
  const period = () => Math.max(50, 1000 / Math.max(1, map.frame_rate || 10));

  async function poll() {
    try {
      const since = frame ? `?since=${frame.tick}` : "";
      const response = await fetch(`/v2/console/world/${encodeURIComponent(id)}/frame${since}`, { credentials: "same-origin" });
      if (response.status === 200) {
        const bytes = new Uint8Array(await response.arrayBuffer());
        try {
          frame = decode(bytes, frame);
        } catch (e) {
          console.warn(`world frame: ${e.message}; asking for a full one`);
          frame = null;
        }
        if (frame) {
          frames++;
          arrived.push(performance.now());
          canvas.dataset.frames = frames;
          set("world-bytes", `${bytes.length} B`);
          draw();
        }
      } else if (response.status !== 204) {
        set("world-fps", `error ${response.status}`);
        if (response.status === 401 || response.status === 404) return;
      }
    } catch (e) {
      console.warn(`world frame: ${e.message}`);
    }
    setTimeout(poll, period());
  }

  async function start() {
    const response = await fetch(`/v2/console/world/${encodeURIComponent(id)}`, { credentials: "same-origin" });
    if (!response.ok) { set("world-fps", `error ${response.status}`); return; }
    map = (await response.json()).map;
    if (!map.frame_rate) { set("world-fps", "view off (world.view_rate = 0)"); }
    drawBackground();
    draw();
    if (map.frame_rate) poll();
  }
  start();
})();
