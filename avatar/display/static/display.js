// Display page of the Avatar Controller: renders the hub's snapshot, then applies live events.
// No dependencies (venues may have no internet): plain DOM, SVG and CSS animations.
"use strict";
(function () {
  let looks = {}; // name -> "female" | "male", from the snapshot (each avatar's voice)
  const GESTURE_MS = 1400;          // one gesture, when nothing else is waiting
  const GESTURE_QUEUED_MS = 800;    // a gesture with others waiting behind it (all play, in order)
  const BLINK_MS = [2200, 6000];    // idle blinking: a random pause in this range, then a blink
  const BLINK_HOLD_MS = 140;
  const FALLBACK_AFTER_MS = 300;    // no lip-sync timeline by then: a plain talking mouth
  const LOG_KEPT = 30;
  const AUDIO_MARGIN_MS = 80;       // browser audio starts this much inside the controller's latency, so
                                    // the speaking begin/end events bracket what is heard here
  const RECONNECT_MS = 1000;
  let PHASES = {};  // the phases' names, from the first snapshot
  // mouth opening (rx, ry in the figure's units) of each viseme name of avatar/visemes.py
  const VISEME_SHAPES = {
    rest: [13, 1.5], closed: [14, 0.6], fv: [12, 3], th: [12, 4], cons: [12, 4.5], ch: [9, 6],
    aa: [14, 13], e: [15, 8.5], ee: [17, 5], o: [10, 11], u: [7, 7],
  };
  const FEED = document.body.dataset.feed;  // the server writes the feed's address into the page
  const params = new URLSearchParams(location.search);
  const token = params.get("token");
  const stage = document.getElementById("stage");
  const el = (id) => document.getElementById(id);
  let clockOffset = 0; // server ms - local ms
  let round = null;
  let attention = null;
  let camera = null;
  let speakingNow = null;
  let deals = [];
  let totals = null;
  const avatars = {}; // name -> {node, speech, gestures}

  // -- avatars --------------------------------------------------------------------------------
  function avatar(name) {
    if (avatars[name]) return avatars[name];
    const node = document.getElementById("avatar-template").content.firstElementChild.cloneNode(true);
    node.id = "avatar-" + name;
    node.dataset.name = name;
    node.dataset.look = looks[name] || (stage.children.length % 2 ? "male" : "female");
    node.querySelector(".name").textContent = name;
    node.querySelector(".caption").id = "caption-" + name;
    stage.appendChild(node);
    const state = { node: node, speech: null, queue: [], current: null, timer: null, started: 0 };
    avatars[name] = state;
    scheduleBlink(state);
    return state;
  }
  const avatarNode = (name) => avatar(name).node;

  function scheduleBlink(state) {
    const wait = BLINK_MS[0] + Math.random() * (BLINK_MS[1] - BLINK_MS[0]);
    setTimeout(() => {
      state.node.classList.add("blink");
      setTimeout(() => { state.node.classList.remove("blink"); scheduleBlink(state); }, BLINK_HOLD_MS);
    }, wait);
  }

  // Whom each avatar faces: itself speaking or addressed, the buyer; the other one speaking, it.
  function updateFacing() {
    const names = [...stage.children].map((n) => n.dataset.name);
    for (const name of names) {
      const node = avatarNode(name);
      let facing = "ahead";
      if (speakingNow === name) facing = "buyer";
      else if (speakingNow && names.includes(speakingNow)) facing = names.indexOf(speakingNow) < names.indexOf(name) ? "left" : "right";
      else if (attention && attention.target === name && cameraUp()) facing = "buyer";
      node.dataset.facing = facing;
    }
  }

  // -- captions -------------------------------------------------------------------------------
  function setCaption(name, text) {
    const caption = avatarNode(name).querySelector(".caption");
    caption.textContent = text || "";
    caption.scrollTop = 0;
    caption.dataset.words = String((text || "").split(/\s+/).filter(Boolean).length);
    caption.dataset.said = "0";
  }

  // keep the words being spoken in view when a long caption does not fit in its three lines
  function followWord(name) {
    const caption = avatarNode(name).querySelector(".caption");
    const said = Number(caption.dataset.said || 0) + 1;
    caption.dataset.said = String(said);
    const total = Number(caption.dataset.words || 1);
    const overflow = caption.scrollHeight - caption.clientHeight;
    if (overflow > 0) caption.scrollTop = Math.max(0, Math.min(overflow, (said / total) * caption.scrollHeight - caption.clientHeight / 2));
  }

  // -- speech and lip-sync --------------------------------------------------------------------
  function setSpeaking(name, on) {
    const node = avatarNode(name);
    node.classList.toggle("speaking", on);
    node.dataset.speaking = on ? "true" : "false";
  }

  function setViseme(state, viseme) {
    if (state.node.dataset.viseme === viseme) return;
    const shape = VISEME_SHAPES[viseme] || VISEME_SHAPES.rest;
    const mouth = state.node.querySelector(".mouth-open");
    mouth.style.rx = shape[0] + "px";
    mouth.style.ry = shape[1] + "px";
    state.node.dataset.viseme = viseme;
  }

  // The audio's first sample is heard latency_ms after the begin event (sound card buffer);
  // each viseme is shown at its own offset in the audio from then on.
  function beginSpeech(e, origin) {
    const state = avatar(e.avatar);
    const heard = origin + (e.latency_ms || 0) - (e.audio ? AUDIO_MARGIN_MS : 0);
    state.speech = { id: e.message_id, origin: heard, timeline: [], next: 0 };
    moveMouths();
    clearTimeout(state.fallback);
    state.fallback = setTimeout(() => {
      if (state.speech && state.speech.id === e.message_id && !state.speech.timeline.length) state.node.classList.add("talk-fallback");
    }, FALLBACK_AFTER_MS);
  }

  function addVisemes(e) {
    const state = avatar(e.avatar);
    const speech = state.speech;
    if (!speech || speech.id !== e.message_id) return;
    for (const item of e.visemes || []) speech.timeline.push(item);
    state.node.classList.remove("talk-fallback");
  }

  function endSpeech(name, cut) {
    const state = avatar(name);
    state.speech = null;
    if (cut && state.audio) { for (const source of state.audio.sources) try { source.stop(); } catch (err) { /* not started */ } }
    clearTimeout(state.fallback);
    state.node.classList.remove("talk-fallback");
    setViseme(state, "rest");
  }

  // The mouths move on animation frames only while somebody speaks: a frame loop kept running
  // through the silences would have the browser produce every frame of an idle display.
  let mouthsMoving = false;
  function moveMouths() {
    if (mouthsMoving) return;
    mouthsMoving = true;
    requestAnimationFrame(animateMouths);
  }

  function animateMouths() {
    const now = performance.now();
    let speaking = false;
    for (const state of Object.values(avatars)) {
      const speech = state.speech;
      if (!speech) continue;
      speaking = true;
      const at = now - speech.origin;
      while (speech.next < speech.timeline.length && speech.timeline[speech.next][0] <= at) speech.next++;
      if (speech.next > 0) setViseme(state, speech.timeline[speech.next - 1][1]);
    }
    mouthsMoving = speaking;
    if (speaking) requestAnimationFrame(animateMouths);
  }

  // -- browser audio (speaker = "browser"): the utterance's WAV, streamed while it is spoken,
  // played from the same origin as the mouth shapes -----------------------------------------
  let audioCtx = null;
  function audioContext() {
    if (!audioCtx) { try { audioCtx = new AudioContext(); } catch (err) { return null; } }
    if (audioCtx.state === "suspended") audioCtx.resume().catch(() => {});
    return audioCtx;
  }
  document.addEventListener("click", () => { if (audioContext()) el("sound").hidden = true; });
  audioContext(); // warm up early: a context's clock takes a moment to start

  function concat(a, b) {
    if (!a.length) return b;
    const out = new Uint8Array(a.length + b.length);
    out.set(a); out.set(b, a.length);
    return out;
  }

  async function playAudio(e) {
    const ctx = audioContext();
    const state = avatar(e.avatar);
    if (!ctx || !state.speech || state.speech.id !== e.message_id) return;
    if (ctx.state !== "running") { el("sound").hidden = false; return; }  // no sound until a click
    const play = { id: e.message_id, sources: [], samples: 0 };
    state.audio = play;
    let response;
    try { response = await fetch(e.audio + (token ? "?token=" + encodeURIComponent(token) : ""), { cache: "no-store" }); }
    catch (err) { return; }
    if (!response.ok || !response.body) return;
    const reader = response.body.getReader();
    let pending = new Uint8Array(0), rate = 0, at = null, stamp = null;
    const toPerf = (t) => stamp.performanceTime + (t - stamp.contextTime) * 1000;
    const playing = () => state.audio === play && state.speech && state.speech.id === play.id;
    for (;;) {
      const { value, done } = await reader.read();
      if (done || !playing()) break;
      let bytes = concat(pending, value);
      if (!rate) {
        if (bytes.length < 44) { pending = bytes; continue; }
        rate = new DataView(bytes.buffer, bytes.byteOffset, 44).getUint32(24, true);
        bytes = bytes.subarray(44);
      }
      const usable = bytes.length - (bytes.length % 2);
      pending = bytes.slice(usable);
      if (!usable) continue;
      if (at === null) {  // the audio clock against the page's (a sample scheduled now is heard
        // after the output's latency), from the origin the mouth follows too
        stamp = { contextTime: ctx.currentTime, performanceTime: performance.now() + 1000 * ((ctx.outputLatency || 0) + (ctx.baseLatency || 0)) };
        at = stamp.contextTime + (state.speech.origin - stamp.performanceTime) / 1000;
      }
      const view = new DataView(bytes.buffer, bytes.byteOffset, usable);
      const n = usable / 2;
      const buffer = ctx.createBuffer(1, n, rate);
      const data = buffer.getChannelData(0);
      for (let i = 0; i < n; i++) data[i] = view.getInt16(2 * i, true) / 32768;
      const source = ctx.createBufferSource();
      source.buffer = buffer;
      source.connect(ctx.destination);
      // audio that arrives late is cut, never shifted: the voice stays on the speech's clock,
      // in step with the mouth and inside the speaking begin/end
      const late = Math.max(0, ctx.currentTime - at);
      if (late < n / rate) {
        source.start(at + late, late);
        if (!play.sources.length) state.node.dataset.audioStart = String(toPerf(at + late));
        play.sources.push(source);
      }
      at += n / rate;
      play.samples += n;
      state.node.dataset.audioEnd = String(toPerf(at));
      state.node.dataset.audioSamples = String(play.samples);
    }
  }

  // -- gestures: every one plays, in order; one waiting shortens the one playing ---------------
  function playGesture(name, gesture) {
    const state = avatar(name);
    const node = state.node;
    node.dataset.gestures = ((node.dataset.gestures || "") + " " + gesture).trim();
    state.queue.push(gesture);
    if (!state.current) nextGesture(state);
    else shortenGesture(state);
  }

  function shortenGesture(state) {
    const left = GESTURE_QUEUED_MS - (performance.now() - state.started);
    clearTimeout(state.timer);
    state.timer = setTimeout(() => finishGesture(state), Math.max(0, left));
  }

  function nextGesture(state) {
    const node = state.node;
    const gesture = state.queue.shift();
    state.current = gesture;
    state.started = performance.now();
    const ms = state.queue.length ? GESTURE_QUEUED_MS : GESTURE_MS;
    node.style.setProperty("--gesture-ms", ms + "ms");
    void node.offsetWidth; // restart the animation when the same gesture repeats
    node.classList.add("gesturing", "g-" + gesture);
    node.dataset.gesture = gesture;
    node.querySelector(".gesture-label").textContent = gesture.replace("_", " ");
    state.timer = setTimeout(() => finishGesture(state), ms);
  }

  function finishGesture(state) {
    const node = state.node;
    node.classList.remove("gesturing", "g-" + state.current);
    node.querySelector(".gesture-label").textContent = "";
    node.dataset.gesture = "";
    state.current = null;
    if (state.queue.length) nextGesture(state);
  }

  // -- the buyer ------------------------------------------------------------------------------
  // Gaze is available when the camera worker says it is online, or (no status known) once
  // any attention has come: otherwise "no camera", never a misleading "nobody".
  function cameraUp() {
    if (camera) return camera.state === "online";
    return attention != null;
  }

  function showAttention() {
    const up = cameraUp();
    const target = up && attention ? attention.target : "";
    const shown = el("attention");
    shown.dataset.camera = up ? "up" : "none";
    shown.dataset.target = target || "";
    shown.textContent = !up ? "no camera" : target || "nobody";
    for (const node of stage.children) node.classList.toggle("attended", node.dataset.name === target);
    updateFacing();
  }

  function setHuman(msg) {
    const text = msg ? msg.text || "" : "";
    el("last-human").textContent = text;
    el("buyer").dataset.empty = text ? "false" : "true";
  }

  // -- round, timer, summary ------------------------------------------------------------------
  function setRound(view, serverNow) {
    if (serverNow) clockOffset = serverNow - Date.now();
    round = view;
    el("round-id").textContent = view && view.round_id != null ? String(view.round_id) : "-";
    const phase = view ? view.phase : "idle";
    el("round-phase").dataset.phase = phase;
    el("round-phase").textContent = PHASES[phase] || phase;
    tick();
    renderSummary();
  }

  // The timer runs four times a second; a write of the same text would still have the browser
  // lay out and paint the page again, so only what changed is written.
  function show(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  function tick() {
    const timer = el("round-timer");
    let text = "--:--";
    let seconds = null;
    if (round && round.phase_deadline && stoppedAt === null) {
      const left = Math.max(0, Math.round((round.phase_deadline - (Date.now() + clockOffset)) / 1000));
      text = String(Math.floor(left / 60)).padStart(2, "0") + ":" + String(left % 60).padStart(2, "0");
      seconds = String(left);
    }
    show(timer, text);
    if (seconds !== null && timer.dataset.seconds !== seconds) timer.dataset.seconds = seconds;
  }
  setInterval(tick, 250);

  let MASS_NOUNS = new Set();  // goods people do not put in the plural ("2 flour"), from the first snapshot
  // the plural of a noun and a count as formats/written.py writes them: "1 egg", "2 eggs", "3 blueberries", "2 flour"
  const plural = (noun) => MASS_NOUNS.has(noun.toLowerCase()) || /s$/i.test(noun) ? noun
    : /(x|ch|sh)$/i.test(noun) ? noun + "es" : /[^aeiou]y$/i.test(noun) ? noun.slice(0, -1) + "ies" : noun + "s";
  const count = (n, noun) => n + " " + (n === 1 ? noun : plural(noun));
  const goods = (quantity) => Object.entries(quantity || {}).map(([k, v]) => count(v, k)).join(", ") || "-";
  // money as formats/written.py writes it: "$0.80", "-$2.50", "$1,250.00" (another currency after the amount)
  const money = (v, unit) => typeof v !== "number" || !isFinite(v) ? "-"
    : (v < 0 ? "-" : "") + (!unit || unit === "USD" ? "$" : "") +
      Math.abs(v).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }) + (unit && unit !== "USD" ? " " + unit : "");

  function row(table, cells) {
    const tr = document.createElement("tr");
    for (const text of cells) {
      const td = document.createElement("td");
      td.textContent = text;
      tr.appendChild(td);
    }
    table.querySelector("tbody").appendChild(tr);
  }

  // After the negotiation: the deals the EO booked (seller, goods, price), then the EO's totals;
  // both come from the room's ledger with every change (the "deals" event), never counted here.
  function renderSummary() {
    const phase = round ? round.phase : "idle";
    const shown = phase === "post" || phase === "ended" || totals != null;
    el("summary").hidden = !shown;  // drawn all the same: it is the room's account of the round, shown after it
    document.body.dataset.summary = shown ? "true" : "false";
    el("summary-round").textContent = round && round.round_id != null ? String(round.round_id) : "-";
    el("summary-title").textContent = totals ? "deals and totals" : "deals";
    const dealRows = el("deals").querySelector("tbody");
    dealRows.textContent = "";
    for (const deal of deals) row(el("deals"), [deal.seller, goods(deal.goods), money(deal.price)]);
    el("deals").hidden = !deals.length;
    el("no-deals").hidden = deals.length > 0;
    const totalRows = el("totals").querySelector("tbody");
    totalRows.textContent = "";
    el("totals").hidden = !totals;
    if (!totals) return;
    for (const [name, t] of Object.entries(totals || {})) {
      const utility = t && t.utility && typeof t.utility === "object" ? money(t.utility.value, t.utility.currencyUnit) : "-";
      const paid = t && t.cost != null ? "paid " + money(t.cost) : t && t.revenue != null ? "earned " + money(t.revenue) : "-";
      row(el("totals"), [name, goods(t && t.quantity), paid, utility]);
    }
  }

  // -- history: oldest first, as many whole lines as fit ---------------------------------------
  function addLog(item) {
    const li = document.createElement("li");
    const speaker = document.createElement("span");
    speaker.className = "speaker";
    speaker.textContent = item.speaker;
    const text = document.createElement("span");
    text.className = "text";
    text.textContent = item.text;
    li.appendChild(speaker);
    if (!item.permitted) {  // the reason before the text: a long blocked message still shows why
      li.className = "blocked";
      const badge = document.createElement("span");
      badge.className = "badge";
      badge.textContent = "blocked: " + (item.rationale || "no reason given");
      li.appendChild(badge);
    }
    li.appendChild(text);
    el("log").appendChild(li);
    while (el("log").children.length > LOG_KEPT) el("log").firstChild.remove();
    fitLog();
  }

  function fitLog() {
    const log = el("log");
    const items = [...log.children];
    for (const li of items) li.hidden = false;
    let height = items.reduce((sum, li) => sum + li.offsetHeight, 0);
    for (const li of items.slice(0, -1)) {  // the newest always shows
      if (height <= log.clientHeight) break;
      height -= li.offsetHeight;
      li.hidden = true;
    }
  }
  window.addEventListener("resize", fitLog);

  // -- confirmations: the operator answers here; in "buyer" mode the question is shown large and the
  // buyer answers on the buyer page or by voice. Sellers' accepts are asked one at a time: the
  // first of the queue is shown, with how many wait after it.
  function showConfirms(queue) {
    el("confirms").textContent = "";
    const req = (queue || [])[0];
    if (req) showConfirm(req, queue.length - 1);
  }
  function showConfirm(req, more) {
    const box = document.createElement("div");
    box.className = "confirm";
    box.id = "confirm-" + req.id;
    box.dataset.asks = req.asks || "operator";
    const bid = req.bid || {};
    const price = bid.price ? " for " + money(Number(bid.price.value), bid.price.unit) : "";
    const p = document.createElement("p");
    const buyerAnswers = req.asks === "buyer";
    p.textContent = req.speaker + " accepts: " + goods(bid.quantity) + price + "." +
      (buyerAnswers ? " Buyer: deal? Say “yes” or “no”." : " Confirm the deal?") +
      (more > 0 ? " (" + more + " more waiting)" : "");
    box.appendChild(p);
    if (!buyerAnswers) {
      for (const [label, accept] of [["Confirm", true], ["Decline", false]]) {
        const button = document.createElement("button");
        button.textContent = label;
        button.className = accept ? "confirm-accept" : "confirm-decline";
        button.dataset.id = req.id;
        button.onclick = () => send({ type: "confirm", id: req.id, accept: accept, by: "operator" });
        box.appendChild(button);
      }
    }
    el("confirms").appendChild(box);
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

  let socket = null;
  function send(obj) { if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(obj)); }

  const handlers = {
    snapshot(s) {
      PHASES = s.phase_names || PHASES;
      MASS_NOUNS = new Set(s.mass_nouns || []);
      looks = s.looks || looks;
      for (const name of s.avatars) avatar(name);
      // every caption from the snapshot, an empty one too: a page that outlived a restart of the
      // controller must not keep the previous buyer's captions
      for (const name of s.avatars) setCaption(name, ((s.captions || {})[name] || {}).text || "");
      speakingNow = s.speaking ? s.speaking.avatar : null;
      for (const name of s.avatars) {
        const on = speakingNow === name;
        setSpeaking(name, on);
        if (on) { beginSpeech(s.speaking, performance.now()); avatar(name).node.classList.add("talk-fallback"); }
        else endSpeech(name);
      }
      attention = s.attention;
      camera = s.camera;
      showAttention();
      setHuman(s.last_human);
      round = null;
      setRound(s.round, null);
      deals = s.deals || [];
      totals = s.totals;
      renderSummary();
      el("log").textContent = "";
      for (const item of s.log || []) addLog(item);
      showConfirms(s.confirms);
    },
    message(m) { if (m.speaker === "Human") setHuman(m); },
    speaking(e) {
      if (e.state === "begin") {
        setCaption(e.avatar, e.text);
        beginSpeech(e, performance.now());
        speakingNow = e.avatar;
        setSpeaking(e.avatar, true);
        if (e.audio) playAudio(e);
      } else {
        endSpeech(e.avatar, e.cut);
        if (speakingNow === e.avatar) speakingNow = null;
        setSpeaking(e.avatar, false);
      }
      updateFacing();
    },
    visemes(e) { addVisemes(e); },
    word(e) { avatarNode(e.avatar).dataset.word = e.word; followWord(e.avatar); },
    gesture(e) { playGesture(e.avatar, e.name); },
    attention(v) { attention = v; showAttention(); },
    camera(v) { camera = v; showAttention(); },
    round(v) { setRound(v, v.now); },
    deals(e) { deals = e.deals || []; totals = e.totals || null; renderSummary(); },
    log(item) { addLog(item); },
    confirms(e) { showConfirms(e.queue); },
  };

  function connect() {
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + FEED + (token ? "?token=" + encodeURIComponent(token) : "");
    socket = new WebSocket(url);
    socket.onopen = () => { el("connection").dataset.state = "connected"; el("connection").textContent = "connected"; roomBack(); };
    socket.onmessage = (ev) => {
      const event = JSON.parse(ev.data);
      const handler = handlers[event.type];
      if (handler) handler(event);
      document.body.dataset.events = String(Number(document.body.dataset.events || 0) + 1);
    };
    socket.onclose = () => {
      el("connection").dataset.state = "closed";
      el("connection").textContent = "reconnecting…";
      roomStopped();
      showConfirms([]);  // the controller answered them as it stopped; what waits comes back with the feed
      tick();
      setTimeout(connect, RECONNECT_MS);
    };
  }
  connect();
})();
