/* salon curation app: the keyboard hot path of the label and compare views.
 *
 * Loaded into the Gradio page by apps/app_label.py (gr.HTML head) before each view's own file,
 * salon_label.js and salon_compare.js; each view's gr.HTML calls window.salon.mountLabel /
 * mountCompare on load. This file holds what both share: the session, the JSON calls, the
 * keyboard, the outbox. Talks to the JSON routes of apps/app_api.py.
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

  // What the views (salon_label.js, salon_compare.js) draw on.
  S.shared = { call, h, afterPaint, session, loadImage };
})();
