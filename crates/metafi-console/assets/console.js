// MetaFi console: the pages' behaviour, hand-written (no framework, no build step).
// Changes go through the console's JSON API with the session's CSRF token; the status and
// matches pages poll the API once a second and draw their charts on <canvas>.
"use strict";

const csrf = document.querySelector('meta[name="csrf-token"]')?.content || "";

async function api(method, path, body) {
  const headers = { "x-csrf-token": csrf };
  if (body !== undefined) headers["content-type"] = "application/json";
  const response = await fetch(path, {
    method, headers, credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json = {};
  try { json = text ? JSON.parse(text) : {}; } catch (_) { json = { message: text }; }
  if (!response.ok) throw new Error(json.message || `${response.status}`);
  return json;
}

function say(text, isError) {
  const el = document.getElementById("message");
  if (!el) return;
  el.textContent = text;
  el.className = isError ? "message error" : "message";
  el.hidden = false;
}

async function act(what, fn) {
  try { await fn(); say(what); } catch (e) { say(e.message, true); }
}

// A line chart of one or more series on a canvas: no library, a few dozen lines.
function chart(canvas, series, colors) {
  const ctx = canvas.getContext("2d");
  const w = canvas.width, h = canvas.height, pad = 28;
  ctx.clearRect(0, 0, w, h);
  const all = series.flat();
  const max = Math.max(1, ...all) * 1.15;
  const span = Math.max(30, ...series.map((p) => p.length)) - 1;
  ctx.strokeStyle = "#e4e7ec"; ctx.fillStyle = "#667085"; ctx.font = "10px sans-serif";
  for (let i = 0; i <= 2; i++) {
    const y = pad / 2 + (h - pad) * i / 2;
    ctx.beginPath(); ctx.moveTo(pad, y); ctx.lineTo(w, y); ctx.stroke();
    ctx.fillText(fmt(max * (2 - i) / 2), 0, y + 3);
  }
  series.forEach((points, s) => {
    ctx.strokeStyle = colors[s % colors.length]; ctx.lineWidth = 1.5; ctx.beginPath();
    points.forEach((v, i) => {
      const x = pad + (w - pad) * i / span;
      const y = pad / 2 + (h - pad) * (1 - v / max);
      i ? ctx.lineTo(x, y) : ctx.moveTo(x, y);
    });
    ctx.stroke();
  });
  canvas.dataset.points = String(series[0].length);
}

function fmt(v) {
  if (v >= 100) return v.toFixed(0);
  if (v >= 1) return v.toFixed(1);
  return v.toPrecision(2);
}

const LIMIT = 120;
function push(list, value) { list.push(value); if (list.length > LIMIT) list.shift(); }

const pages = {
  login() {
    document.getElementById("signin-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        const answer = await api("POST", "/v2/console/authenticate", {
          username: document.getElementById("username").value,
          password: document.getElementById("password").value,
          mfa: document.getElementById("mfa").value,
        });
        if (answer.token) { location.href = "/status"; return; }
        // MFA is required and not set up yet: the setup token carries the secret.
        setupToken = answer.mfa_code;
        const claims = JSON.parse(atob(setupToken.split(".")[1].replace(/-/g, "+").replace(/_/g, "/")));
        document.getElementById("mfa-secret").textContent = claims.secret;
        document.getElementById("mfa-url").textContent = claims.mfa_url;
        document.getElementById("mfa-setup").hidden = false;
        say("Set up two-factor authentication to sign in.");
      } catch (e) { say(e.message, true); }
    });
    let setupToken = "";
    document.getElementById("mfa-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        const answer = await api("POST", "/v2/console/authenticate/mfa", {
          mfa: setupToken, code: document.getElementById("mfa-setup-code").value,
        });
        document.getElementById("recovery-codes").textContent = answer.recovery_codes.join("\n");
        document.getElementById("mfa-setup").hidden = true;
        document.getElementById("mfa-recovery").hidden = false;
        say("Two-factor authentication is set up: sign in with a code.");
      } catch (e) { say(e.message, true); }
    });
  },

  users() {
    for (const row of document.querySelectorAll("#users tbody tr")) {
      const name = row.dataset.username;
      const path = `/v2/console/user/${encodeURIComponent(name)}`;
      row.querySelector("select.role").addEventListener("change", (event) =>
        act("Role changed.", () => api("PUT", path, { role: Number(event.target.value) })));
      row.querySelector("input.mfa-required").addEventListener("change", (event) =>
        act("Saved.", () => api("POST", `${path}/mfa/require`, { required: event.target.checked })));
      row.querySelector("button.mfa-reset").addEventListener("click", () =>
        act("MFA reset.", async () => { await api("POST", `${path}/mfa/reset`); location.reload(); }));
      row.querySelector("button.delete-user").addEventListener("click", () => {
        if (!confirm(`Delete console user ${name}?`)) return;
        act("Deleted.", async () => { await api("DELETE", path); location.reload(); });
      });
    }
    document.getElementById("add-user").addEventListener("submit", (event) => {
      event.preventDefault();
      act("User added.", async () => {
        await api("POST", "/v2/console/user", {
          username: document.getElementById("new-username").value,
          email: document.getElementById("new-email").value,
          password: document.getElementById("new-password").value,
          role: Number(document.getElementById("new-role").value),
          mfa_required: document.getElementById("new-mfa-required").checked,
        });
        location.reload();
      });
    });
  },

  status() {
    const history = { rate: [], latency: [], cpu: [], rss: [] };
    let last = null;
    const tick = async () => {
      let s;
      try { s = await api("GET", "/v2/console/status"); } catch (e) { say(e.message, true); return; }
      const node = s.nodes[0];
      document.getElementById("sockets").textContent = node.session_count;
      document.getElementById("match-count").textContent = node.match_count;
      document.getElementById("rss").textContent = `${Math.round(node.rss_bytes / 1048576)} MiB`;
      document.getElementById("uptime").textContent = `${node.uptime_sec} s`;
      document.getElementById("peers").textContent = s.peers.length;
      const totals = s.routes.reduce((a, r) => [a[0] + r.requests, a[1] + r.latency_sum_sec], [0, 0]);
      if (last) {
        const dt = Math.max(0.001, (s.timestamp_ms - last.at) / 1000);
        const n = totals[0] - last.requests;
        push(history.rate, n / dt);
        push(history.latency, n > 0 ? (totals[1] - last.latency) * 1000 / n : 0);
        push(history.cpu, (node.cpu_seconds - last.cpu) * 100 / dt);
        push(history.rss, node.rss_bytes / 1048576);
        chart(document.getElementById("chart-rate"), [history.rate], ["#2563eb"]);
        chart(document.getElementById("chart-latency"), [history.latency], ["#9333ea"]);
        chart(document.getElementById("chart-cpu"), [history.cpu], ["#dc2626"]);
        chart(document.getElementById("chart-rss"), [history.rss], ["#059669"]);
      }
      last = { at: s.timestamp_ms, requests: totals[0], latency: totals[1], cpu: node.cpu_seconds };
      const rows = (selector, list) => document.querySelector(selector).replaceChildren(...list.map((cells) => {
        const tr = document.createElement("tr");
        for (const v of cells) { const td = document.createElement("td"); td.textContent = v; tr.append(td); }
        return tr;
      }));
      const avg = (sum, n) => (n ? (sum * 1000 / n).toFixed(2) : "–");
      rows("#routes tbody", s.routes.map((r) => [r.method, r.route, r.requests, r.errors, avg(r.latency_sum_sec, r.requests)]));
      rows("#rpc-stats tbody", s.rpcs.map((r) => [r.runtime, r.id, r.calls, r.errors, avg(r.latency_sum_sec, r.calls)]));
    };
    tick();
    setInterval(tick, 1000);
  },

  account() {
    const id = document.querySelector("dl.profile").dataset.userId;
    const path = `/v2/console/account/${id}`;
    document.getElementById("save-metadata").addEventListener("click", () =>
      act("Metadata saved.", () => api("POST", path, { metadata: document.getElementById("metadata").value })));
    document.getElementById("save-wallet").addEventListener("click", () =>
      act("Wallet saved.", () => api("POST", path, { wallet: document.getElementById("wallet").value })));
    document.getElementById("ban")?.addEventListener("click", () =>
      act("Banned.", async () => { await api("POST", `${path}/ban`); location.reload(); }));
    document.getElementById("unban")?.addEventListener("click", () =>
      act("Unbanned.", async () => { await api("POST", `${path}/unban`); location.reload(); }));
    document.querySelectorAll("#account-sessions tr[data-session-id] button.disconnect").forEach((button) => {
      const sid = button.closest("tr").dataset.sessionId;
      button.addEventListener("click", () =>
        act("Disconnected.", async () => {
          await api("POST", `${path}/session/${sid}/disconnect`);
          button.closest("tr").remove();
        }));
    });
    document.getElementById("delete-account").addEventListener("click", () => {
      if (!confirm("Delete this account and everything it owns?")) return;
      act("Deleted.", async () => { await api("DELETE", path); location.href = "/accounts"; });
    });
  },

  storage() {
    const object = document.getElementById("object");
    if (!object) return;
    const { collection, key, userId } = object.dataset;
    const path = `/v2/console/storage/${encodeURIComponent(collection)}/${encodeURIComponent(key)}/${userId}`;
    document.getElementById("save-object").addEventListener("click", () =>
      act("Saved.", async () => {
        const ack = await api("PUT", path, {
          value: document.getElementById("object-value").value,
          version: document.getElementById("object-version").textContent,
          permission_read: Number(document.getElementById("object-read").value),
          permission_write: Number(document.getElementById("object-write").value),
        });
        document.getElementById("object-version").textContent = ack.version;
      }));
    document.getElementById("delete-object").addEventListener("click", () => {
      if (!confirm("Delete this object?")) return;
      act("Deleted.", async () => {
        await api("DELETE", `${path}/${document.getElementById("object-version").textContent}`);
        location.href = `/storage?collection=${encodeURIComponent(collection)}`;
      });
    });
  },

  matches() {
    const history = new Map();
    const tick = async () => {
      let list;
      try { list = await api("GET", "/v2/console/match"); } catch (e) { say(e.message, true); return; }
      for (const m of list.matches) {
        const section = document.querySelector(`section.match[data-match-id="${CSS.escape(m.api_match.match_id)}"]`);
        if (!section || !m.stats) continue;
        const h = history.get(m.api_match.match_id) || { tick: [], late: [] };
        history.set(m.api_match.match_id, h);
        push(h.tick, m.stats.last_tick_seconds * 1000);
        push(h.late, m.stats.last_lateness_seconds * 1000);
        section.querySelector(".size").textContent = m.api_match.size;
        section.querySelector(".stats").textContent =
          `ticks ${m.stats.ticks} · tick ${(m.stats.last_tick_seconds * 1000).toFixed(3)} ms (max ${(m.stats.max_tick_seconds * 1000).toFixed(3)}) · ` +
          `late ${(m.stats.last_lateness_seconds * 1000).toFixed(3)} ms (max ${(m.stats.max_lateness_seconds * 1000).toFixed(3)}) · ` +
          `overruns ${m.stats.overruns} · skipped ${m.stats.skipped_ticks} · queue ${m.stats.input_queue_depth}`;
        section.dataset.ticks = String(m.stats.ticks);
        chart(section.querySelector("canvas"), [h.tick, h.late], ["#2563eb", "#f59e0b"]);
      }
    };
    document.querySelectorAll("section.match").forEach((section) => {
      section.querySelector("button.signal")?.addEventListener("click", () =>
        act("Signalled.", async () => {
          const r = await api("POST", `/v2/console/match/${encodeURIComponent(section.dataset.matchId)}/signal`,
            { data: section.querySelector(".signal-data").value });
          section.querySelector(".signal-result").textContent = r.result;
        }));
      section.querySelector("button.end-match")?.addEventListener("click", () => {
        if (!confirm("End this match? Its handler's match_terminate runs with the configured grace.")) return;
        act("Match told to end.", async () => {
          await api("DELETE", `/v2/console/match/${encodeURIComponent(section.dataset.matchId)}`);
          section.classList.add("ending");
        });
      });
    });
    tick();
    setInterval(tick, 1000);
  },

  runtime() {
    document.getElementById("rpc-form").addEventListener("submit", (event) => {
      event.preventDefault();
      const id = document.getElementById("rpc-id").value;
      act("Called.", async () => {
        const r = await api("POST", `/v2/console/api/endpoints/rpc/${encodeURIComponent(id)}`, {
          body: document.getElementById("rpc-body").value,
          user_id: document.getElementById("rpc-user").value.trim(),
        });
        document.getElementById("rpc-time").textContent = `${r.duration_ms.toFixed(2)} ms`;
        document.getElementById("rpc-result").textContent = r.error_message ? `error: ${r.error_message}` : r.body;
      });
    });
  },
};

document.getElementById("sign-out")?.addEventListener("click", async () => {
  try { await api("POST", "/v2/console/authenticate/logout"); } finally { location.href = "/login"; }
});
pages[document.body.dataset.page]?.();
