// The buyer's page: the display hub's feed (snapshot, then live events) rendered for a person
// holding a tablet or phone. No dependencies: a venue may have no internet.
"use strict";
(function () {
  const body = document.body;
  const FEED = body.dataset.feed, CHECK = body.dataset.check, SAVE = body.dataset.save;
  let PHASES = {};  // the phases' names, from the first snapshot
  const PHASE_HINTS = { post: ": save your allocation" };
  const capital = (text) => text ? text[0].toUpperCase() + text.slice(1) : text;
  const RECONNECT_MS = 1000;
  const token = new URLSearchParams(location.search).get("token");
  const el = (id) => document.getElementById(id);
  // money as formats/written.py writes it: "$0.80", "-$2.50", "$1,250.00" (another currency after the amount)
  const money = (v, unit) => typeof v !== "number" || !isFinite(v) ? "-"
    : (v < 0 ? "-" : "") + (!unit || unit === "USD" ? "$" : "") +
      Math.abs(v).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 }) + (unit && unit !== "USD" ? " " + unit : "");
  let MASS_NOUNS = new Set();  // goods people do not put in the plural ("2 flour"), from the first snapshot
  // the plural of a noun and a count as formats/written.py writes them: "1 egg", "2 eggs", "3 blueberries", "2 flour"
  const plural = (noun) => MASS_NOUNS.has(noun.toLowerCase()) || /s$/i.test(noun) ? noun
    : /(x|ch|sh)$/i.test(noun) ? noun + "es" : /[^aeiou]y$/i.test(noun) ? noun.slice(0, -1) + "ies" : noun + "s";
  const count = (n, noun) => n + " " + (n === 1 ? noun : plural(noun));
  // a good measured in a unit of its own is said with it: "4 ounces of chocolate", "1 teaspoon of vanilla";
  // one counted "each" (or whose unit is not known) as a count: "2 eggs"
  const measure = (n, unit, good) => !unit || unit === "each" ? count(n, good) : count(n, unit) + " of " + good;
  // the unit of a good, from the buyer's utility (its supplements name theirs: chocolate in ounces)
  function unitOf(good) {
    for (const product of Object.values((buyer && buyer.utility && buyer.utility.values) || {})) {
      const s = (product.supplements || {})[good];
      if (s && s.unit) return s.unit;
    }
    return null;
  }
  const goodsText = (goods) => Object.entries(goods || {}).map(([g, n]) => measure(n, unitOf(g), g)).join(", ") || "nothing";

  let clockOffset = 0;
  let round = null;
  let buyer = null;
  let confirmMode = "buyer";
  let confirms = [];  // the sellers' accepts waiting for the buyer: the first is the one asked
  let editing = null;   // the allocation being edited: {cake: [{good, quantity}|null, ...], pancake: [...]}
  let edited = false;
  let savedAt = null;  // when the allocation the pages show as saved was saved
  let socket = null;

  function send(obj) { if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(obj)); }

  // -- phase and budget ----------------------------------------------------------------------
  function renderRound() {
    const phase = round ? round.phase : "idle";
    body.dataset.phase = phase;
    el("phase").textContent = capital(PHASES[phase] || phase) + (PHASE_HINTS[phase] || "");
    el("round-id").textContent = round && round.round_id !== null && round.round_id !== undefined ? "round " + round.round_id : "";
    el("allocation-panel").hidden = !(phase === "post" && buyer && buyer.plan);
  }
  // The timers run four times a second; a write of the same text would still have the browser
  // lay out and paint the page again, so only what changed is written.
  function show(node, text) {
    if (node.textContent !== text) node.textContent = text;
  }

  function tick() {
    if (!round || !round.phase_deadline || stoppedAt !== null) { show(el("timer"), ""); return; }
    const left = Math.max(0, Math.round((round.phase_deadline - (Date.now() + clockOffset)) / 1000));
    show(el("timer"), Math.floor(left / 60) + ":" + String(left % 60).padStart(2, "0"));
  }
  setInterval(() => { tick(); tickConfirm(); }, 250);

  // -- the book --------------------------------------------------------------------------------
  function renderBuyer() {
    const b = buyer || {};
    el("left").textContent = money(b.left);
    el("of-budget").textContent = b.budget !== null && b.budget !== undefined ? "of " + money(b.budget) : "";
    const values = el("values");
    values.textContent = "";
    const utility = b.utility;
    el("values-empty").hidden = !!utility;
    if (b.utility_problem) { el("values-empty").hidden = false; el("values-empty").textContent = "Your values could not be read: " + b.utility_problem; }
    if (utility) {
      for (const line of utility.lines) {
        const li = document.createElement("li");
        li.textContent = line;
        if (/ each$/.test(line)) li.className = "value-main";
        values.appendChild(li);
      }
    }
    const offers = el("offers");
    offers.textContent = "";
    el("offers-empty").hidden = (b.offers || []).length > 0;
    el("offers-empty").textContent = b.offered ? "No offer open now: ask a seller for one." : "No offer yet: ask a seller.";
    for (const offer of b.offers || []) {
      const li = document.createElement("li");
      li.dataset.seller = offer.seller;
      li.innerHTML = '<span class="offer-seller"></span>: <span class="offer-goods"></span><span class="offer-price"></span>';
      li.querySelector(".offer-seller").textContent = offer.seller;
      li.querySelector(".offer-goods").textContent = goodsText(offer.goods);
      li.querySelector(".offer-price").textContent = money(offer.price);
      offers.appendChild(li);
    }
    el("recipe").textContent = Object.entries(b.recipe || {}).map(([product, goods]) =>
      product[0].toUpperCase() + product.slice(1) + " = " + goodsText(goods)).join(" · ");
    const have = b.have || {};
    el("have-empty").hidden = Object.keys(have).length > 0;
    el("have").textContent = Object.keys(have).length ? goodsText(have) + " for " + money(b.spent) : "";
    // answered yes, not yet booked: the EO's books are the truth, and it has not booked these yet
    el("waiting-eo").textContent = (b.waiting_eo || []).map((d) =>
      "Sent to the EO, waiting for it to book: " + d.seller + ", " + goodsText(d.goods) + " for " + money(d.price) + ".").join(" ");
    // a deal that waited for the buyer's answer when the room restarted: what became of it
    const cut = el("cut-deals");
    cut.textContent = "";
    for (const d of b.cut || []) {
      const li = document.createElement("li");
      li.dataset.fate = d.fate;
      li.textContent = d.seller + "'s deal, " + goodsText(d.goods) + " for " + money(d.price) + ": " +
        (d.fate === "booked" ? "booked" : d.fate === "not_booked" ? "not booked" : "not known yet") + " — " + d.why + ".";
      cut.appendChild(li);
    }
    if (b.plan) {
      el("plan").textContent = planText(b.plan.products) + " — worth " + money(b.plan.value);
      const more = b.plan.needed_for_one_more || {};
      el("needed").textContent = Object.entries(more).map(([product, goods]) =>
        "One more " + product + " needs " + goodsText(goods) + ".").join(" ");
    } else {
      el("plan").textContent = utility ? "-" : "Your values are not known yet.";
      el("needed").textContent = "";
    }
    showSaved(b.saved);
    // the editor shows the allocation saved (on whichever page), or the best plan, until the buyer edits it here
    if (!edited && (b.saved || b.plan)) editing = fromProducts((b.saved || b.plan).products);
    renderEditor();
    renderSummary();
    renderRound();
  }
  // every page shows the last Save, whichever page made it (the allocation comes back in the buyer view)
  const savedText = (value) => "Saved: worth " + money(value) + ". You may change it and save again until the post-round ends.";
  function showSaved(saved) {
    if (!saved) { if (savedAt !== null) { savedAt = null; status(""); } return; }
    if (saved.at === savedAt) return;
    savedAt = saved.at;
    edited = false;
    status(savedText(saved.value), true);
  }

  function planText(products) {
    const parts = [];
    for (const [product, block] of Object.entries(products || {})) {
      if (!block.quantity) continue;
      const extras = (block.supplement || []).map((s) => Object.entries(s)[0]).filter(Boolean)
        .map(([good, s]) => measure(s.quantity, s.unit, good));
      parts.push(count(block.quantity, product) + (extras.length ? " (with " + extras.join(", ") + ")" : ""));
    }
    return parts.join(" and ") || "nothing to bake yet";
  }

  function renderSummary() {
    const b = buyer || {};
    const human = b.human_totals;
    el("summary-panel").hidden = !(human || b.saved);
    const lines = [];
    if (b.saved) lines.push("Saved: " + planText(b.saved.products) + (b.saved.value !== null ? ", worth " + money(b.saved.value) : "") + ".");
    if (b.result) lines.push(b.result);  // the EO's score in words, from the server
    el("summary").textContent = lines.join(" ");
  }

  // -- the allocation editor ------------------------------------------------------------------
  function fromProducts(products) {
    const out = {};
    for (const [product, block] of Object.entries(products || {})) {
      const units = [];
      for (let i = 0; i < (block.quantity || 0); i++) {
        const s = (block.supplement || [])[i] || {};
        const first = Object.entries(s)[0];
        units.push(first ? { good: first[0], unit: first[1].unit, quantity: first[1].quantity } : null);
      }
      out[product] = units;
    }
    return out;
  }
  function toProducts() {
    const products = {};
    for (const [product, units] of Object.entries(editing || {})) {
      products[product] = { unit: "each", quantity: units.length,
        supplement: units.map((u) => (u && u.quantity > 0 ? { [u.good]: { unit: u.unit, quantity: u.quantity } } : {})) };
    }
    return products;
  }
  function supplementsOf(product) {
    const lines = ((buyer && buyer.utility && buyer.utility.values && buyer.utility.values[product]) || {}).supplements || {};
    return lines;
  }
  function renderEditor() {
    const box = el("editor");
    box.textContent = "";
    if (!editing) return;
    for (const [product, units] of Object.entries(editing)) {
      const group = document.createElement("div");
      group.className = "product-box";
      box.appendChild(group);
      const row = document.createElement("div");
      row.className = "count-row";
      row.dataset.product = product;
      const minus = document.createElement("button"); minus.type = "button"; minus.textContent = "−"; minus.setAttribute("aria-label", "one " + product + " fewer");
      const plus = document.createElement("button"); plus.type = "button"; plus.textContent = "+"; plus.setAttribute("aria-label", "one " + product + " more");
      const number = document.createElement("span"); number.className = "count"; number.textContent = String(units.length);
      const name = document.createElement("span"); name.textContent = units.length === 1 ? product : plural(product);
      minus.onclick = () => { if (units.length) { units.pop(); edited = true; renderEditor(); } };
      plus.onclick = () => { units.push(null); edited = true; renderEditor(); };
      row.append(minus, number, plus, name);
      group.appendChild(row);
      const supplements = supplementsOf(product);
      units.forEach((u, i) => {
        const unitRow = document.createElement("div");
        unitRow.className = "unit-row";
        const label = document.createElement("span"); label.textContent = product + " " + (i + 1) + ":";
        const select = document.createElement("select");
        select.innerHTML = '<option value="">no extra</option>';
        for (const [good, s] of Object.entries(supplements)) {
          const o = document.createElement("option"); o.value = good; o.textContent = good + (s.unit && s.unit !== "each" ? " (" + plural(s.unit) + ")" : ""); select.appendChild(o);
        }
        select.value = u ? u.good : "";
        const amount = document.createElement("input");
        amount.type = "number"; amount.min = "0"; amount.step = "1"; amount.inputMode = "numeric";
        amount.value = u ? String(u.quantity) : "";
        amount.hidden = !u;
        select.onchange = () => {
          const good = select.value;
          units[i] = good ? { good, unit: supplements[good].unit, quantity: supplements[good].max_quantity || 1 } : null;
          edited = true; renderEditor();
        };
        amount.onchange = () => { if (units[i]) { units[i].quantity = Math.max(0, Math.round(Number(amount.value) || 0)); edited = true; } };
        unitRow.append(label, select, amount);
        group.appendChild(unitRow);
      });
    }
  }
  let noticeTimer = null;
  let noticeAbout = null;  // the confirmation the notice speaks of (its booking is added to it)
  let noticePhase = null;  // the round and phase the notice belongs to: it ends with them
  const phaseOf = () => round ? round.round_id + " " + round.phase : "";
  function notice(text, about) {
    const box = el("notice");
    box.textContent = text; box.hidden = !text;
    noticeAbout = about || null;
    noticePhase = phaseOf();
    clearTimeout(noticeTimer);
    noticeTimer = setTimeout(endNotice, 8000);
  }
  function endNotice() { el("notice").hidden = true; noticeAbout = null; noticePhase = null; }
  function status(text, ok) { const s = el("allocation-status"); s.textContent = text; s.dataset.ok = ok === undefined ? "" : String(ok); }
  async function post(path, payload) {
    const response = await fetch(path + (token ? "?token=" + encodeURIComponent(token) : ""), {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(payload), credentials: "same-origin" });
    let answer = {};
    try { answer = await response.json(); } catch (e) { answer = { ok: false, reason: "HTTP " + response.status }; }
    return answer;
  }
  el("use-best").onclick = () => { edited = true; if (buyer && buyer.plan) editing = fromProducts(buyer.plan.products); renderEditor(); status(""); };
  el("check").onclick = async () => {
    status("checking…");
    const a = await post(CHECK, { products: toProducts() });
    if (a.sufficient) status("Fine: worth " + money(a.value) + ".", true);
    else status(a.reason || (a.missing ? "Not enough: it needs " + a.missing + "." : "Not enough of what was bought."), false);
  };
  el("save").onclick = async () => {
    el("save").disabled = true;
    status("saving…");
    try {
      const a = await post(SAVE, { products: toProducts() });
      status(a.saved ? savedText(a.value) : (a.reason || "not saved"), !!a.saved);
    } finally { el("save").disabled = false; }
  };

  // -- confirmations ---------------------------------------------------------------------------
  function currentConfirm() { return confirms[0] || null; }
  function renderConfirm() {
    const req = currentConfirm();
    el("confirm").hidden = !req;
    if (!req) return;
    el("confirm").dataset.id = req.id;
    el("confirm-title").textContent = req.speaker + " accepts: deal?";
    el("confirm-deal").textContent = goodsText(req.goods) + " for " + money(req.price);
    el("confirm-budget").textContent = req.budget_after !== null && req.budget_after !== undefined ? "Budget after: " + money(req.budget_after) : "";
    el("confirm-said").textContent = req.text ? "“" + req.text + "”" : "";
    el("confirm-queue").textContent = confirms.length > 1 ? count(confirms.length - 1, "more deal") + " waiting after this one." : "";
    const mine = req.asks === "buyer";
    el("confirm-accept").hidden = !mine;
    el("confirm-decline").hidden = !mine;
    tickConfirm();
  }
  function tickConfirm() {
    const req = currentConfirm();
    if (!req || !req.deadline) return;
    const left = Math.max(0, Math.round((req.deadline - (Date.now() + clockOffset)) / 1000));
    const answer = req.timeout_answer === "acknowledged" ? "accepted" : "declined";
    show(el("confirm-timeout"), req.asks === "buyer"
      ? "Tap, or say “yes” or “no”. Without an answer it is " + answer + " in " + left + " s."
      : "The operator answers. Without an answer it is " + answer + " in " + left + " s.");
  }
  function answer(accept) {
    const req = currentConfirm();
    if (req) send({ type: "confirm", id: req.id, accept: accept, by: "buyer" });
  }
  el("confirm-accept").onclick = () => answer(true);
  el("confirm-decline").onclick = () => answer(false);

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

  // -- the feed --------------------------------------------------------------------------------
  const handlers = {
    snapshot(s) {
      PHASES = s.phase_names || PHASES;
      MASS_NOUNS = new Set(s.mass_nouns || []);
      confirmMode = s.confirm_mode || confirmMode;
      round = s.round; buyer = s.buyer || null; confirms = s.confirms || [];
      renderBuyer(); renderConfirm(); tick();
    },
    round(v) {
      if (v.now) clockOffset = v.now - Date.now();
      const newRound = !round || round.round_id !== v.round_id;
      round = v;
      if (newRound) { edited = false; editing = null; savedAt = null; status(""); }
      if (noticePhase !== null && noticePhase !== phaseOf()) endNotice();
      renderRound(); tick();
    },
    buyer(v) { buyer = v; renderBuyer(); },
    confirms(e) { confirms = e.queue || []; renderConfirm(); },
    confirm_done(e) {
      const sent = e.accepted ? " Sent to the EO: waiting for it to book the deal." : "";
      notice(e.by === "timeout" ? "Time ran out: the deal was " + (e.accepted ? "accepted" : "declined") + " without your answer." + sent
        : e.by === "shutdown" ? "The room stopped: the deal was " + (e.accepted ? "accepted" : "declined") + " without your answer." + sent
        : "Deal " + (e.accepted ? "accepted" : "declined") + (e.by === "voice" ? " by voice." : ".") + sent, e.id);
    },
    booked(e) {
      const booked = "Booked by the EO: " + goodsText(e.goods) + " from " + e.seller + " for " + money(e.price) + ".";
      if (e.prompt_id && e.prompt_id === noticeAbout && !el("notice").hidden) {
        notice(el("notice").textContent.replace(" Sent to the EO: waiting for it to book the deal.", "") + " " + booked, e.prompt_id);
      } else notice(booked, e.prompt_id);
    },
  };
  function connect() {
    const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host + FEED + (token ? "?token=" + encodeURIComponent(token) : "");
    socket = new WebSocket(url);
    socket.onopen = () => { el("connection").dataset.state = "connected"; el("connection").textContent = "connected"; roomBack(); };
    socket.onmessage = (ev) => {
      const event = JSON.parse(ev.data);
      const handler = handlers[event.type];
      if (handler) handler(event);
      body.dataset.events = String(Number(body.dataset.events || 0) + 1);
    };
    socket.onclose = () => {
      el("connection").dataset.state = "closed";
      el("connection").textContent = "reconnecting…";
      roomStopped();
      confirms = [];  // the controller answered them as it stopped; what waits comes back with the feed
      renderConfirm();
      tick();
      setTimeout(connect, RECONNECT_MS);
    };
  }
  connect();
})();
