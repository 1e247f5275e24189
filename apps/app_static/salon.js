/* salon curation app: the keyboard hot path of the label and compare views.
 *
 * Loaded into the Gradio page by apps/app_label.py (gr.HTML head); each view's gr.HTML calls
 * window.salon.mountLabel / mountCompare on load. Talks to the JSON routes of apps/app_api.py.
 *
 * Speed: the next paintings are decoded ahead of time (Image objects kept in a window around
 * the cursor), so a keypress swaps an already-decoded <img> into the page and the label is
 * committed in the background. Safety: every label goes into an outbox (mirrored in
 * localStorage, so a reload re-sends it) and leaves it only when the server answered, i.e.
 * after the store committed it; failures are retried with backoff and shown, never dropped.
 * Labels of one candidate are sent in order (a label, then its undo).
 *
 * window.salon.metrics.paint / .ack collect keydown-to-painted and keydown-to-ack times (ms)
 * for benchmarks/bench_app.py.
 */
(() => {
  if (window.salon) return;
  const S = (window.salon = { metrics: { paint: [], ack: [] }, views: [] });
  const AHEAD = 6, BEHIND = 2, PAGE = 30, REFILL_MS = 4000;
  const TIERS = { 1: "love", 2: "okay", 3: "nope" };

  // With logins, the JSON routes know the user by the salon-session cookie. Gradio names the
  // logged-in user to its own events, so the endpoint /salon_session (Gradio's REST call API:
  // POST for an event id, then GET its result stream) hands out a token bound to that user.
  async function handshake() {
    const post = await fetch("/gradio_api/call/salon_session", { method: "POST",
      credentials: "same-origin", headers: { "content-type": "application/json" },
      body: JSON.stringify({ data: [] }) });
    if (post.ok) {
      const { event_id } = await post.json();
      const stream = await fetch(`/gradio_api/call/salon_session/${event_id}`, { credentials: "same-origin" });
      const done = (await stream.text()).match(/event: complete\ndata: (.*)/);
      if (done) {
        document.cookie = `salon-session=${JSON.parse(done[1])[0]}; path=/; samesite=strict`;
        return true;
      }
    }
    return false;
  }

  async function call(path, body, retried) {
    const init = body === undefined ? {} : {
      method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) };
    const r = await fetch(path, { credentials: "same-origin", ...init });
    if (r.status === 401 && !retried && await handshake()) return call(path, body, true);
    if (!r.ok) {
      let message = r.statusText;
      try { message = (await r.json()).detail || message; } catch (_) { /* not JSON */ }
      throw Object.assign(new Error(message), { status: r.status });
    }
    return r.json();
  }

  function h(tag, props, ...children) {
    const el = document.createElement(tag);
    Object.assign(el, props || {});
    for (const c of children) if (c !== null && c !== undefined) el.append(c);
    return el;
  }

  // Runs `fn` once the frame holding the current DOM has been painted (rAF, then a task).
  function afterPaint(fn) {
    requestAnimationFrame(() => {
      const ch = new MessageChannel();
      ch.port1.onmessage = fn;
      ch.port2.postMessage(0);
    });
  }

  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  const typing = (t) => t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName));

  // One document listener: no click needed first; keys typed into a field are left alone.
  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey || typing(e.target)) return;
    const t0 = performance.now();
    for (const v of S.views) {
      if (v.root.isConnected && v.root.offsetParent !== null && v.key(e.key, t0)) {
        e.preventDefault();
        return;
      }
    }
  });

  class Outbox {
    constructor(user) {
      this.key = "salon-outbox:" + user;
      this.ops = JSON.parse(localStorage.getItem(this.key) || "[]");
      this.chains = new Map();
      this.t0s = new WeakMap();  // keydown times of this page's ops (not of re-sent ones)
      this.acked = 0;
      this.problem = null;
      this.badges = [];
      for (const op of this.ops) this.send(op);  // left over from an earlier page: re-send
    }
    save() { localStorage.setItem(this.key, JSON.stringify(this.ops)); }
    push(op, t0) {
      op.uid = `${Date.now()}-${Math.random()}`;
      this.ops.push(op);
      this.save();
      if (t0 !== undefined) this.t0s.set(op, t0);
      afterPaint(() => { this.send(op); this.show(); });  // stored now, sent after the frame
    }
    pendingIds() { return new Set(this.ops.map((op) => op.chain)); }
    send(op) {
      const prev = this.chains.get(op.chain) || Promise.resolve();
      const next = prev.then(() => this.deliver(op));
      this.chains.set(op.chain, next);
      next.then(() => { if (this.chains.get(op.chain) === next) this.chains.delete(op.chain); });
    }
    async deliver(op) {
      for (let attempt = 0; ; attempt++) {
        try {
          const answer = await call(op.path, op.body);
          if (op.path === "/salon/api/label" && S.label) S.label.acked(op.body.id, answer);
          if (this.t0s.has(op)) S.metrics.ack.push(performance.now() - this.t0s.get(op));
          this.acked++;
          if (this.problem && this.problem.retry) this.problem = null;
          return this.remove(op);
        } catch (e) {
          if (e.status === 400 || e.status === 404) {  // the store refused it: retrying cannot help
            this.problem = { text: `not saved (${op.body.id || "pair"}): ${e.message}` };
            return this.remove(op);
          }
          this.problem = { retry: true, text: e.status === 401
            ? "logged out: reload the page and log in; labels are waiting"
            : `server unreachable, retrying: ${e.message}` };
          this.show();
          await sleep(Math.min(5000, 200 * 2 ** attempt));
        }
      }
    }
    remove(op) {
      this.ops = this.ops.filter((o) => o.uid !== op.uid);
      this.save();
      this.show();
    }
    show() {
      const n = this.ops.length;
      const text = this.problem ? "⚠ " + this.problem.text
        : n ? `⏳ ${n} pending` : `✓ all saved${this.acked ? ` (${this.acked})` : ""}`;
      for (const b of this.badges) {
        b.textContent = text;
        b.dataset.pending = n;
        b.dataset.acked = this.acked;
        b.classList.toggle("salon-problem", !!this.problem);
      }
    }
  }

  async function session(root) {
    if (!S.me) S.me = call("/salon/api/me");
    const me = await S.me;
    S.outbox = S.outbox || new Outbox(me.user);
    S.outbox.badges.push(root.querySelector(".salon-ack"));
    S.outbox.show();
    return me;
  }

  function loadImage(url) {
    const img = new Image();
    img.className = "salon-painting";
    img.src = url;
    return { img, ready: img.decode().then(() => true, () => false) };
  }

  class LabelView {
    constructor(root) {
      this.root = root;
      this.stage = root.querySelector(".salon-stage");
      this.meta = root.querySelector(".salon-meta");
      this.count = root.querySelector(".salon-count");
      this.ids = [];
      this.items = new Map();
      this.imgs = new Map();
      this.pos = 0;
      this.history = [];
      this.loading = new Map();  // id -> the request fetching its details
      this.lastRefill = 0;
    }
    async start() {
      try {
        const me = await session(this.root);
        this.user = me.user;
        for (const [f, values] of [["model", me.models], ["subject", me.subjects]]) {
          const sel = this.root.querySelector(`[data-f=${f}]`);
          for (const v of values) sel.append(h("option", { value: v, textContent: v }));
        }
        for (const el of this.root.querySelectorAll("[data-f]")) {
          el.addEventListener("change", () => { el.blur(); this.reload(); });
        }
        await this.reload();
      } catch (e) {
        this.message(`cannot load the pool: ${e.message}`);
      }
    }
    filters() {
      const f = {};
      for (const el of this.root.querySelectorAll("[data-f]")) {
        f[el.dataset.f] = el.type === "checkbox" ? el.checked : el.value;
      }
      return f;
    }
    async reload() {
      this.message("loading…");
      const asked = (this.asked = (this.asked || 0) + 1);
      const q = await call("/salon/api/queue", this.filters());
      if (asked !== this.asked) return;  // the filters changed again meanwhile
      const pending = S.outbox.pendingIds();
      const view = this.filters().view;
      this.ids = view === "unlabelled" ? q.ids.filter((id) => !pending.has(id)) : q.ids;
      this.known = new Set(this.ids);
      Object.assign(this, { labelled: q.labelled, total: q.total, pos: 0, history: [] });
      this.show();
    }
    async refill() {  // candidates stored since (a generation run): append them to the queue
      if (Date.now() - this.lastRefill < REFILL_MS) return;
      this.lastRefill = Date.now();
      const asked = this.asked;
      const q = await call("/salon/api/queue", this.filters());
      if (asked !== this.asked) return;
      const fresh = q.ids.filter((id) => !this.known.has(id));
      if (!fresh.length) return;
      for (const id of fresh) this.known.add(id);
      this.ids.push(...fresh);
      this.total = q.total;
      if (this.pos >= this.ids.length - fresh.length) this.show();
      else this.renderCount();
    }
    async ensure() {  // item details for the window ahead, one request per page
      const span = this.ids.slice(Math.max(0, this.pos - BEHIND), this.pos + PAGE);
      const want = span.filter((id) => !this.items.has(id) && !this.loading.has(id));
      if (want.length) {
        const got = call("/salon/api/items", { ids: want })
          .then(({ items }) => { for (const it of items) this.items.set(it.id, it); })
          .finally(() => want.forEach((id) => this.loading.delete(id)));
        want.forEach((id) => this.loading.set(id, got));
      }
      await Promise.all(span.map((id) => this.loading.get(id)).filter(Boolean));
      this.prefetch();
    }
    prefetch() {
      const keep = new Set(this.ids.slice(Math.max(0, this.pos - BEHIND), this.pos + AHEAD + 1));
      for (const id of keep) {
        const it = this.items.get(id);
        if (it && it.image && !this.imgs.has(id)) this.imgs.set(id, loadImage(it.image));
      }
      for (const id of this.imgs.keys()) if (!keep.has(id)) this.imgs.delete(id);
      const need = this.ids.slice(this.pos, this.pos + AHEAD + 1).some((id) => !this.items.has(id));
      if (need) this.ensure().catch(() => {});  // show() reports it when it needs the item
      if (this.pos >= this.ids.length - AHEAD) this.refill().catch(() => {});
    }
    message(text) {
      delete this.stage.dataset.id;
      this.stage.replaceChildren(h("div", { className: "salon-empty", textContent: text }));
    }
    show(t0) {
      const id = this.ids[this.pos];
      this.renderCount();
      if (id === undefined) {
        this.meta.replaceChildren();
        this.message(this.ids.length ? "the end of this view: nothing left (new candidates join here)"
          : "nothing to show with these filters");
        this.prefetch();
        return;
      }
      const it = this.items.get(id);
      if (!it) {
        this.message("loading…");
        this.ensure().then(() => { if (this.ids[this.pos] === id && this.items.has(id)) this.show(t0); },
          (e) => { if (this.ids[this.pos] === id) this.message(`cannot load: ${e.message}`); });
        return;
      }
      // Only the painting goes into this frame; its details and the prefetching follow right
      // after it is on screen, so nothing else competes with the keypress's frame.
      const after = () => {
        if (this.stage.dataset.id !== id) return;
        if (t0 !== undefined) S.metrics.paint.push(performance.now() - t0);
        this.renderMeta(it);
        this.prefetch();
      };
      if (it.image) {
        const p = this.imgs.get(id) || loadImage(it.image);
        this.imgs.set(id, p);
        this.stage.replaceChildren(p.img);
        this.stage.dataset.id = id;
        p.ready.then((ok) => {
          if (this.stage.dataset.id !== id) return;
          if (!ok) this.stage.replaceChildren(h("div", { className: "salon-empty",
            textContent: "the image could not be loaded: run `salon pool check`" }));
          afterPaint(after);
        });
      } else {
        this.stage.replaceChildren(h("div", { className: "salon-empty", textContent: it.image_problem }));
        this.stage.dataset.id = id;
        afterPaint(after);
      }
    }
    renderCount() {
      const at = this.ids.length ? `${Math.min(this.pos + 1, this.ids.length)} / ${this.ids.length} in view` : "";
      this.count.textContent = `${this.labelled} of ${this.total} labelled · ${at}`;
      this.count.dataset.labelled = this.labelled;
    }
    renderMeta(it) {
      const others = Object.entries(it.labels).filter(([who]) => who !== this.user)
        .map(([who, t]) => `${who}: ${t}`).join(", ");
      const gate = it.ok === true ? "passed the gate" : it.ok === false
        ? "rejected: " + it.violations.join(", ") : "not rendered";
      const rows = [
        ["your label", h("b", { className: `salon-tier salon-${it.mine || "none"}`, textContent: it.mine || "—" })],
        // The server sends the others' tiers only once you labelled it: they would anchor you.
        ["consensus", !it.mine ? "shown once you label it"
          : (it.consensus || "unlabelled") + (others ? ` (${others})` : "")],
        ["subject", it.subject || "—"], ["model", it.model || "—"],
        ["seed · round", `${it.seed} · ${it.round}`], ["gate", gate],
        ["id", it.id.slice(0, 12) + (it.dup_of ? ` (near-duplicate of ${it.dup_of.slice(0, 12)})` : "")],
      ];
      const dl = h("dl", {});
      for (const [k, v] of rows) dl.append(h("dt", { textContent: k }), h("dd", {}, v));
      const guide = it.guide && h("div", { className: "salon-guide" },
        h("img", { src: it.guide.url, alt: "guide photo", loading: "lazy" }),
        h("div", {}, it.guide.observation_url
          ? h("a", { href: it.guide.observation_url, target: "_blank", rel: "noopener",
            textContent: it.guide.attribution || "guide photo" })
          : (it.guide.attribution || "guide photo"), ` · ${it.guide.license || "license unknown"}`));
      this.meta.replaceChildren(dl, guide || "", h("pre", { className: "salon-code", textContent: it.code }));
    }
    key(k, t0) {
      if (TIERS[k]) this.label(TIERS[k], t0);
      else if (k === "s" || k === "ArrowRight") this.move(1, t0);
      else if (k === "ArrowLeft") this.move(-1, t0);
      else if (k === "u" || k === "Backspace") this.undo(t0);
      else return false;
      return true;
    }
    move(step, t0) {
      const pos = Math.max(0, Math.min(this.ids.length, this.pos + step));
      if (pos === this.pos) return;
      this.pos = pos;
      this.show(t0);
    }
    acked(id, answer) {  // the committed label brings the others' tiers, now that yours is in
      const it = this.items.get(id);
      if (!it || (it.mine || null) !== answer.tier) return;  // a later key changed it again
      Object.assign(it, { labels: answer.labels, consensus: answer.consensus });
      if (this.stage.dataset.id === id) this.renderMeta(it);
    }
    setTier(it, tier, t0) {
      if (!!it.mine !== !!tier) this.labelled += tier ? 1 : -1;
      it.mine = tier;
      if (tier) it.labels[this.user] = tier; else delete it.labels[this.user];
      S.outbox.push({ path: "/salon/api/label", chain: it.id, body: { id: it.id, tier } }, t0);
    }
    label(tier, t0) {
      const it = this.items.get(this.ids[this.pos]);
      if (!it) return;
      this.history.push({ id: it.id, was: it.mine || null });
      this.setTier(it, tier, t0);
      this.move(1, t0);
    }
    undo(t0) {
      const last = this.history.pop();
      if (!last) return;
      const it = this.items.get(last.id);
      this.setTier(it, last.was, t0);
      this.pos = this.ids.indexOf(last.id);
      this.show(t0);
    }
  }

  class CompareView {
    constructor(root) {
      this.root = root;
      this.sides = { left: root.querySelector("[data-side=left]"), right: root.querySelector("[data-side=right]") };
      this.count = root.querySelector(".salon-count");
      this.chosen = 0;
    }
    async start() {
      try {
        await session(this.root);
        await this.modes();
        this.upcoming = this.fetchPair();
        await this.next();
      } catch (e) {
        this.sides.left.replaceChildren(h("div", { className: "salon-empty", textContent: e.message }));
      }
    }
    // "" compares pool paintings; a run's name compares that run's checkpoints, names hidden
    // (the pair carries opaque sample ids and the subject only: apps/app_checkpoints.py).
    async modes() {
      this.mode = "";
      const sel = this.root.querySelector("[data-f=mode]");
      const { runs } = await call("/salon/api/runs");
      for (const r of runs) {
        sel.append(h("option", { value: r.name, textContent: `checkpoints of ${r.name} (blind)` }));
      }
      sel.hidden = !runs.length;
      sel.addEventListener("change", () => {
        sel.blur();
        this.mode = sel.value;
        this.upcoming = this.fetchPair();
        this.next();
      });
    }
    fetchPair() {
      const mode = this.mode;
      const path = mode ? `/salon/api/ckpt/pair?run=${encodeURIComponent(mode)}` : "/salon/api/pair";
      return call(path).then((pair) => ({
        pair: Object.assign(pair, { mode }), left: loadImage(pair.left.image), right: loadImage(pair.right.image) }));
    }
    async next() {
      this.pair = null;
      let got;
      try {
        got = await this.upcoming;
      } catch (e) {
        this.upcoming = this.fetchPair();
        this.sides.left.replaceChildren(h("div", { className: "salon-empty", textContent: e.message }));
        this.sides.right.replaceChildren();
        return;
      }
      this.upcoming = this.fetchPair();
      for (const side of ["left", "right"]) {
        const it = got.pair[side];
        this.sides[side].replaceChildren(got[side].img, h("div", { className: "salon-caption",
          textContent: got.pair.mode ? it.subject || "" : `${it.model || "unknown model"} · ${it.subject || ""}` }));
        this.sides[side].dataset.id = it.id;
      }
      this.pair = got.pair;
      this.count.textContent = `${this.chosen} choices this session`;
    }
    key(k) {
      const winner = { ArrowLeft: "left", a: "left", ArrowRight: "right", d: "right",
        ArrowDown: "tie", t: "tie" }[k];
      if (k === "n") this.next();
      else if (!winner) return false;
      else if (this.pair) {
        const { left, right, mode } = this.pair;
        S.outbox.push(mode
          ? { path: "/salon/api/ckpt/pair", chain: `ckpt:${mode}:${left.id}:${right.id}`,
            body: { run: mode, left: left.id, right: right.id, winner } }
          : { path: "/salon/api/pair", chain: `pair:${left.id}:${right.id}`,
            body: { left: left.id, right: right.id, winner } }, performance.now());
        this.chosen++;
        this.next();
      }
      return true;
    }
  }

  S.mountLabel = (root) => { const v = new LabelView(root); S.views.push(v); S.label = v; v.start(); };
  S.mountCompare = (root) => { const v = new CompareView(root); S.views.push(v); v.start(); };
})();
