/* salon curation app: the compare view (left or right, or a tie, of two paintings; n another pair).
 *
 * Loaded after salon.js (apps/app_label.py's gr.HTML head), whose window.salon.shared it draws
 * on; the view's gr.HTML calls window.salon.mountCompare(element) on load.
 */
(() => {
  const S = window.salon;
  if (S.mountCompare) return;
  const { call, h, session, loadImage } = S.shared;

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

  S.mountCompare = (root) => { const v = new CompareView(root); S.views.push(v); v.start(); };
})();
