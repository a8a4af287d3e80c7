// Operator console: renders the feed's snapshot, then applies its live events. No libraries.
"use strict";
(function () {
  const RECONNECT_MS = 1000;
  const TRAIL = 45;
  const CALIBRATION_ANSWER_MS = 10000;  // a camera worker that is online answers a request at once
  const SVG = "http://www.w3.org/2000/svg";
  let PHASES = {};  // the phases' names, from the first snapshot
  const token = new URLSearchParams(location.search).get("token");
  const el = (id) => document.getElementById(id);
  let clockOffset = 0; // server ms - local ms
  let round = null;
  let timeline = [];
  let camera = { targets: {}, tolerance_deg: 15 };
  let trail = [];
  const workers = {};
  let speaking = {};

  const serverNow = () => Date.now() + clockOffset;
  function clock(ms) { return new Date(ms).toLocaleTimeString([], { hour12: false }); }
  function span(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    if (s < 90) return s + " s";
    if (s < 5400) return Math.round(s / 60) + " min";
    return (s / 3600).toFixed(1) + " h";
  }
  function node(tag, cls, text) {
    const n = document.createElement(tag);
    if (cls) n.className = cls;
    if (text != null) n.textContent = text;
    return n;
  }
  function svgNode(tag, attrs) {
    const n = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) n.setAttribute(k, String(v));
    return n;
  }

  // -- workers -------------------------------------------------------------------------------
  function figures(health) {
    return Object.entries(health || {}).map(([k, v]) =>
      k + "=" + (v !== null && typeof v === "object" ? JSON.stringify(v) : String(v))).join("  ");
  }
  function setWorker(w) {
    workers[w.worker] = w;
    if (w.worker === camera.worker) setAttention(attention);
    let row = el("worker-" + w.worker);
    if (!row) {
      row = node("tr");
      row.id = "worker-" + w.worker;
      for (const cls of ["name", "state", "host", "pid", "up", "heard", "info"]) row.appendChild(node("td", cls));
      row.lastChild.append(node("div", "detail"), node("div", "figures"));
      const rows = [...el("workers").tBodies[0].rows, row].sort((a, b) => a.id.localeCompare(b.id));
      for (const r of rows) el("workers").tBodies[0].appendChild(r);
    }
    row.dataset.state = w.state;
    row.querySelector(".name").textContent = w.worker;
    row.dataset.silent = w.silent ? "true" : "false";
    row.querySelector(".state").textContent = w.state + (w.silent ? " (silent)" : "");
    row.querySelector(".host").textContent = w.host;
    row.querySelector(".pid").textContent = String(w.pid);
    row.querySelector(".detail").textContent = w.detail;
    row.querySelector(".figures").textContent = figures(w.health);
    row.querySelector(".info").title = [w.detail, figures(w.health), "version " + w.version].filter(Boolean).join("\n");
    ageWorker(w);
  }
  // The timers below run twice a second; a write of the same text would still have the browser
  // lay out and paint the page again, so only what changed is written.
  function show(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  function ageWorker(w) {
    const row = el("worker-" + w.worker);
    if (!row) return;
    show(row.querySelector(".up"), w.state === "offline" ? "-" : span(serverNow() - w.started_at));
    show(row.querySelector(".heard"), span(serverNow() - w.seen));
  }

  // -- links, round, the competition -----------------------------------------------------------
  // the durations of the next round (the room's last ones, or its configured ones), until the operator edits them
  let durationsEdited = false;
  for (const input of document.querySelectorAll("input.duration")) input.addEventListener("input", () => { durationsEdited = true; });
  function showDurations(durations) {
    if (!durations || durationsEdited) return;
    for (const input of document.querySelectorAll("input.duration")) {
      const value = durations[input.dataset.key];
      if (typeof value === "number") input.value = String(value);
    }
  }
  function chosenDurations() {
    const chosen = {};
    for (const input of document.querySelectorAll("input.duration")) if (input.value !== "") chosen[input.dataset.key] = Number(input.value);
    return chosen;
  }
  const seatsText = (seats) => (seats || []).map((s) => s.agent === s.avatar ? s.avatar : s.agent + " as " + s.avatar).join(", ");
  let competition = null;
  function setCompetition(c) {
    if (!c) return;
    competition = c;
    const form = el("round-controls");
    form.dataset.driver = c.driver.kind || "unknown";
    form.dataset.tournament = String(!!c.tournament);
    el("round-driver").textContent = "rounds on " + c.driver.text;
    el("round-driver").title = [c.driver.url, "utilities: " + c.driver.utilities].filter(Boolean).join("\n");
    showDurations(c.durations);
    const next = c.next;
    el("next-up").textContent = !next || !c.tournament ? "" : "next: " + next.buyer + " — " + seatsText(next.seats) +
      (next.replay ? " (played again)" : "") + " · " + c.left + " left in cycle " + next.cycle;
    setStandings(c.standings, c.tournament);
    el("agent-programs").textContent = (c.agents || []).length ? "agent programs running: " +
      c.agents.map((a) => a.agent + " (" + a.avatar + ") on port " + a.port).join(", ") : "";
  }
  function setStandings(st, tournament) {
    el("standings-scope").textContent = tournament ? "the competition" : "today";
    const fill = (id, rows, cells) => {
      const body = el(id).tBodies[0];
      body.textContent = "";
      for (const r of rows) {
        const row = node("tr");
        row.dataset.name = r.name;
        for (const value of cells(r)) row.appendChild(node("td", "", String(value)));
        body.appendChild(row);
      }
    };
    fill("standings-agents", st.agents || [], (a) => [a.name, a.rounds, money(a.utility_mean), money(a.welfare_mean)]);
    // the two categories' leaders, as the server ranks them (of the agents that played)
    for (const row of el("standings-agents").tBodies[0].rows) {
      row.classList.toggle("utility-best", row.dataset.name === st.best_utility);
      row.classList.toggle("welfare-best", row.dataset.name === st.best_welfare);
    }
    fill("standings-buyers", st.buyers || [], (b) => [b.name, b.rounds, money(b.utility_total), ""]);
    const unscored = st.unscored || [];
    el("standings-unscored").textContent = unscored.length ? "not scored: " +
      unscored.map((u) => "round " + u.round + " (" + u.reason + ")").join("; ") : "";
  }
  function setDriver(link) {
    if (link.name !== "eo" || !competition) return;
    if (link.reachable === false) el("round-controls").dataset.driver = "unknown";
  }
  async function roundControl(path, payload) {
    const status = el("round-control-status");
    status.textContent = "…"; status.dataset.ok = "";
    let answer = {};
    try {
      const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify(payload || {}), credentials: "same-origin" });
      answer = await response.json();
    } catch (e) { answer = { ok: false, reason: String(e) }; }
    status.dataset.ok = String(!!answer.ok);
    status.textContent = answer.ok ? (answer.roundId !== undefined ? "round " + answer.roundId +
        (answer.seats ? ": " + (answer.buyer || "(unnamed)") + " — " + seatsText(answer.seats) : answer.phase ? " " + answer.phase : "")
      : answer.buyer !== undefined ? "buyer: " + (answer.buyer || "(unnamed)") : "done") : (answer.reason || "refused");
  }
  el("next-round").onclick = () => roundControl(document.body.dataset.next, { buyer: el("buyer-name").value, durations: chosenDurations() });
  el("set-buyer").onclick = () => roundControl(document.body.dataset.buyer, { buyer: el("buyer-name").value });
  // -- calibration of the buyer's seat (the camera worker measures; its progress comes on the feed)
  let calibrationAsked = 0;
  function setCalibration(c) {
    const box = el("calibration");
    const state = c ? c.state : "idle";
    box.dataset.state = state;
    if (state === "requested") calibrationAsked = Date.now();
    const targets = c && c.targets ? Object.entries(c.targets).map(([n, t]) => n + " " + t.yaw + "°").join(", ") : "";
    box.textContent = state === "idle" ? ""
      : state === "requested" ? "calibration: asking the camera…"
      : state === "measuring" ? "calibration: buyer, look " + (c.phase === "away" ? "away from both avatars" : "at " + c.phase) + " and hold still"
      : state === "done" ? "calibrated: " + targets + " (" + (c.detail || "") + ")"
      : state === "no-camera" ? c.detail
      : "calibration failed: " + (c.detail || "no reason given");
  }
  setInterval(() => {
    if (el("calibration").dataset.state === "requested" && Date.now() - calibrationAsked > CALIBRATION_ANSWER_MS)
      setCalibration({ state: "failed", detail: "the camera worker did not answer" });
  }, 1000);
  el("calibrate").onclick = async () => {
    setCalibration({ state: "requested" });
    let answer = {};
    try {
      const response = await fetch(document.body.dataset.calibrate, { method: "POST", credentials: "same-origin" });
      answer = await response.json();
    } catch (e) { answer = { ok: false, reason: String(e) }; }
    if (!answer.ok) {
      const reason = answer.reason || "refused";
      setCalibration({ state: reason.startsWith("no camera") ? "no-camera" : "failed", detail: reason });
    }
  };
  // money as formats/written.py writes it: "$0.80", "-$2.50", "$1,250.00" (another currency after the amount)
  const money = (v, unit) => typeof v !== "number" || !isFinite(v) ? "-"
    : (v < 0 ? "-" : "") + (!unit || unit === "USD" ? "$" : "") +
      Math.abs(v).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }) + (unit && unit !== "USD" ? " " + unit : "");
  function setDay(d) {
    if (!d) return;
    el("day-date").textContent = d.date || "";
    if (document.activeElement !== el("buyer-name") && d.next_buyer !== undefined) el("buyer-name").value = d.next_buyer;
    const body = el("day").tBodies[0];
    body.textContent = "";
    for (const r of (d.rounds || []).slice().reverse()) {
      const row = node("tr");
      row.dataset.round = r.round;
      row.dataset.state = r.state || "";
      if (r.note) row.title = r.note;  // why a round was lost, or ended without its totals
      for (const value of [r.round, r.buyer || "-", String(r.started || "").slice(0, 5), r.deals, money(r.paid), r.allocation_saved ? "yes" : "no",
        money(r.buyer_utility), money(r.seller_revenue), r.undelivered]) row.appendChild(node("td", "", String(value)));
      // the round's final state in a word, and under the row why, when it did not end with its
      // totals (two lines of it; the whole in the row's tooltip)
      row.appendChild(node("td", "state", r.state === "lost" ? "lost" : r.state === "ended" ? "over" : (PHASES[r.state] || r.state)));
      body.appendChild(row);
      if (r.note) {
        const why = node("tr", "why");
        why.dataset.whyOf = r.round;
        why.dataset.state = r.state || "";
        const cell = node("td");
        cell.appendChild(node("div", "text", r.note));
        cell.colSpan = row.cells.length;
        why.appendChild(cell);
        body.appendChild(why);
      }
    }
  }
  el("end-round").onclick = () => roundControl(document.body.dataset.end, {});

  function setLink(link) {
    setDriver(link);
    const badge = el("link-" + link.name);
    if (!badge) return;
    const ok = link.name === "broker" ? link.connected : link.reachable;
    badge.dataset.ok = ok === true ? "yes" : ok === false ? "no" : "unknown";
    badge.title = [link.url, link.detail].filter(Boolean).join(": ");
    badge.textContent = (link.name === "eo" ? "EO" : "broker") + (ok === true ? " ✓" : ok === false ? " ✗" : " ?");
  }
  function setRound(view, now) {
    if (now) clockOffset = now - Date.now();
    round = view;
    el("round-id").textContent = view && view.round_id != null ? String(view.round_id) : "-";
    const phase = view ? view.phase : "idle";
    el("round-phase").dataset.phase = phase;
    el("round-phase").textContent = PHASES[phase] || phase;
    tick();
  }
  function tick() {
    const timer = el("round-timer");
    if (!round || !round.phase_deadline || stoppedAt !== null) show(timer, "--:--");
    else {
      const left = Math.max(0, Math.round((round.phase_deadline - serverNow()) / 1000));
      show(timer, String(Math.floor(left / 60)).padStart(2, "0") + ":" + String(left % 60).padStart(2, "0"));
    }
  }
  setInterval(() => { tick(); for (const w of Object.values(workers)) ageWorker(w); }, 500);

  // -- head pose -------------------------------------------------------------------------------
  // x: the buyer's left on the left (yaw > 0 is a turn to their own left); y: up is up.
  const px = (yaw) => -yaw;
  const py = (pitch) => -pitch;
  function drawPlot() {
    const grid = el("pose-grid");
    grid.textContent = "";
    for (let d = -60; d <= 60; d += 15) grid.appendChild(svgNode("line", { x1: d, y1: -40, x2: d, y2: 40, class: d ? "grid" : "axis" }));
    for (let d = -30; d <= 30; d += 15) grid.appendChild(svgNode("line", { x1: -60, y1: d, x2: 60, y2: d, class: d ? "grid" : "axis" }));
    const left = svgNode("text", { x: -59, y: 39, class: "tick" }); left.textContent = "← buyer's left (yaw +)";
    const right = svgNode("text", { x: 59, y: 39, class: "tick end" }); right.textContent = "buyer's right (yaw −) →";
    const up = svgNode("text", { x: 1, y: -37, class: "tick" }); up.textContent = "pitch + (up)";
    grid.append(left, right, up);
    const targets = el("pose-targets");
    targets.textContent = "";
    for (const [name, t] of Object.entries(camera.targets || {})) {
      const g = svgNode("g", { id: "target-" + name, class: "target" });
      g.appendChild(svgNode("circle", { cx: px(t.yaw), cy: py(t.pitch), r: camera.tolerance_deg, class: "tolerance" }));
      g.appendChild(svgNode("circle", { cx: px(t.yaw), cy: py(t.pitch), r: 0.8, class: "centre" }));
      const label = svgNode("text", { x: px(t.yaw), y: py(t.pitch) - camera.tolerance_deg - 1.5, class: "name" });
      label.textContent = name + " (" + t.yaw + "°, " + t.pitch + "°)";
      g.appendChild(label);
      g.classList.toggle("speaking", !!speaking[name]);
      targets.appendChild(g);
    }
  }
  function addPose(p) {
    trail.push(p);
    if (trail.length > TRAIL) trail = trail.slice(-TRAIL);
    const dot = el("pose-dot");
    dot.setAttribute("cx", px(Math.max(-60, Math.min(60, p.yaw))));
    dot.setAttribute("cy", py(Math.max(-40, Math.min(40, p.pitch))));
    dot.dataset.yaw = p.yaw.toFixed(1);
    dot.dataset.pitch = p.pitch.toFixed(1);
    dot.dataset.samples = String(Number(dot.dataset.samples) + 1);
    el("pose-trail").setAttribute("points", trail.map((q) => px(q.yaw).toFixed(1) + "," + py(q.pitch).toFixed(1)).join(" "));
    el("pose-readout").textContent = "yaw " + p.yaw.toFixed(1) + "°  pitch " + p.pitch.toFixed(1) + "°  confidence " + p.confidence.toFixed(2);
  }
  let attention = null;
  function setAttention(a) {
    attention = a;
    const target = a ? a.target : "";
    const cam = workers[camera.worker];
    const cameraUp = cam && cam.state === "online" && !cam.silent;
    el("attention").textContent = cameraUp ? target || "nobody" : "no camera";
    el("attention").dataset.camera = cameraUp ? "online" : "none";
    el("attention").dataset.target = target || "";
    for (const g of el("pose-targets").children) g.classList.toggle("attended", g.id === "target-" + target);
  }

  function setSpeaking(avatar, on) {
    speaking[avatar] = on;
    const g = el("target-" + avatar);
    if (g) g.classList.toggle("speaking", on);
  }

  // -- utterances ------------------------------------------------------------------------------
  function timelineRow(stages, who) {
    const row = node("div", "timeline");
    const present = timeline.filter((s) => stages[s.stage] != null);
    if (!present.length) return row;
    const t0 = stages[present[0].stage];
    const end = Math.max(1, stages[present[present.length - 1].stage] - t0);
    const bar = node("div", "bar");
    for (const s of present) {
      const mark = node("span", "mark");
      mark.style.left = (100 * (stages[s.stage] - t0) / end).toFixed(2) + "%";
      bar.appendChild(mark);
    }
    row.appendChild(bar);
    const labels = node("div", "stages");
    for (const s of present) {
      if (s !== present[0]) labels.appendChild(node("span", "arrow", "→"));
      const item = node("span", "stage", s.label + (who && s.reply ? " (" + who + ")" : "") + " ");
      item.dataset.stage = s.stage;
      item.dataset.ms = String(stages[s.stage] - t0);
      item.appendChild(node("b", null, s === present[0] ? "0" : "+" + (stages[s.stage] - t0) + " ms"));
      labels.appendChild(item);
    }
    row.appendChild(labels);
    return row;
  }
  function setUtterance(u) {
    let li = el("utt-" + u.id);
    const fresh = !li;
    if (fresh) { li = node("li", "utterance"); li.id = "utt-" + u.id; }
    li.textContent = "";
    li.dataset.outcome = u.outcome;
    const head = node("div", "head");
    head.appendChild(node("span", "time", clock(u.at)));
    head.appendChild(node("q", "text", u.text));
    head.appendChild(node("span", "addressee", "→ " + (u.addressee || "nobody") + " (" + (u.addressee_source || "?") + ")"));
    head.appendChild(node("span", "engine", (u.engine || u.source || "?") + (u.confidence != null ? " " + u.confidence.toFixed(2) : "")));
    const outcome = node("span", "outcome", u.outcome.replace("_", " ") + (u.reason ? ": " + u.reason : ""));
    outcome.dataset.outcome = u.outcome;
    head.appendChild(outcome);
    li.appendChild(head);
    const replies = u.replies && u.replies.length ? u.replies : [null];
    for (const r of replies) li.appendChild(timelineRow(Object.assign({}, u.stages, r ? r.stages : {}), r ? r.avatar : ""));
    if (fresh) {
      el("utterances").prepend(li);
      while (el("utterances").children.length > 20) el("utterances").lastChild.remove();
    }
  }

  // -- alerts ----------------------------------------------------------------------------------
  // an alert is added once; the same alert again is its resolution (what it said no longer
  // holds: kept in the list, dimmed, and out of the badge, which counts the alerts still true)
  function addAlert(a) {
    let li = el("alert-" + a.id);
    if (!li) {
      li = node("li", "alert");
      li.id = "alert-" + a.id;
      li.appendChild(node("span", "time", clock(a.at)));
      li.appendChild(node("span", "text", a.text));
      li.appendChild(node("span", "resolution"));
      el("alerts").prepend(li);
      while (el("alerts").children.length > 50) el("alerts").lastChild.remove();
    }
    li.dataset.kind = a.kind;
    li.dataset.level = a.level;
    if (a.resolved != null) {
      li.dataset.resolved = "true";
      li.querySelector(".resolution").textContent = " — " + (a.resolution || "resolved") + " (" + clock(a.resolved) + ")";
    }
    el("alert-count").textContent = String(el("alerts").querySelectorAll(".alert:not([data-resolved])").length);
  }

  // -- a room that stopped says so: the feed is gone, and with it the truth of every timer ----------
  let stoppedAt = null;  // when the feed was lost (a reconnection that fails again keeps the first time)
  function roomStopped() {
    if (stoppedAt === null) stoppedAt = new Date();
    const time = stoppedAt.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", hour12: false });
    el("stopped").textContent = document.body.dataset.stopped.replace("{time}", time);
    el("stopped").hidden = false;
    document.body.dataset.room = "stopped";
  }
  function roomBack() {
    stoppedAt = null;
    el("stopped").hidden = true;
    document.body.dataset.room = "live";
  }

  const handlers = {
    snapshot(s) {
      PHASES = s.phase_names || PHASES;
      clockOffset = s.now - Date.now();
      timeline = s.timeline || [];
      camera = s.camera || camera;
      drawPlot();
      el("workers").tBodies[0].textContent = "";
      for (const w of Object.values(s.workers || {})) setWorker(w);
      for (const link of ["broker", "eo"]) if (s.links && s.links[link]) setLink(Object.assign({ name: link }, s.links[link]));
      setRound(s.round, s.now);
      trail = [];
      for (const p of s.poses || []) addPose(p);
      setAttention(s.attention);
      speaking = {};
      for (const [avatar, on] of Object.entries(s.speaking || {})) setSpeaking(avatar, on);
      el("utterances").textContent = "";
      for (const u of s.utterances || []) setUtterance(u);
      el("alerts").textContent = "";
      el("alert-count").textContent = "0";
      for (const a of s.alerts || []) addAlert(a);
      setDay(s.day);
      setCalibration(s.calibration);
      setCompetition(s.competition);
    },
    calibration: setCalibration,
    camera(c) { camera = c; drawPlot(); },
    day: setDay,
    competition: setCompetition,
    status: setWorker,
    link: setLink,
    round(v) { setRound(v, v.now); },
    attention: setAttention,
    headpose: addPose,
    utterance: setUtterance,
    alert: addAlert,
    speaking(e) { setSpeaking(e.avatar, e.state === "begin"); },
  };

  function connect() {
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + document.body.dataset.feed +
      (token ? "?token=" + encodeURIComponent(token) : "");
    const socket = new WebSocket(url);
    socket.onopen = () => { el("connection").dataset.state = "connected"; el("connection").textContent = "live"; roomBack(); };
    socket.onmessage = (ev) => {
      let event;
      try { event = JSON.parse(ev.data); } catch (e) { return; }
      const handler = handlers[event.type];
      if (handler) handler(event);
    };
    socket.onclose = () => {
      el("connection").dataset.state = "closed";
      el("connection").textContent = "reconnecting…";
      roomStopped();
      for (const name of ["broker", "eo"]) setLink({ name: name });  // unknown until the feed is back
      tick();
      setTimeout(connect, RECONNECT_MS);
    };
  }
  connect();
})();
