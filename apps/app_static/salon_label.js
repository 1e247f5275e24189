/* salon curation app: the label view (1 love, 2 okay, 3 nope, s skip, u undo, arrows move).
 *
 * Loaded after salon.js (apps/app_label.py's gr.HTML head), whose window.salon.shared it draws
 * on; the view's gr.HTML calls window.salon.mountLabel(element) on load.
 */
(() => {
  const S = window.salon;
  if (S.mountLabel) return;
  const { call, h, afterPaint, session, loadImage } = S.shared;
  const AHEAD = 6, BEHIND = 2, PAGE = 30, REFILL_MS = 4000;
  const TIERS = { 1: "love", 2: "okay", 3: "nope" };

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

  S.mountLabel = (root) => { const v = new LabelView(root); S.views.push(v); S.label = v; v.start(); };
})();
