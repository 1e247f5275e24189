// salon page start: registered after p5.brush. Seeds p5 and p5.brush before setup, marks
// completion after setup (or after the first drawn frame when the sketch has draw()),
// captures the canvas in that same task (the WebGL back buffer is gone a frame later), and
// wraps the p5 drawing calls and `brush` so the sketch's own bypasses and inventions show.
(() => {
  const S = window.__salon;
  const SKETCH = "salon-sketch.js";
  const sketchCalled = () => {
    const f = String(new Error().stack).split("\n").slice(1).filter((l) => !l.includes("salon-start.js"));
    return f.length > 0 && f[0].includes(SKETCH);
  };
  const wrapP5 = (names, code) => {
    for (const name of names) {
      const real = p5.prototype[name];
      if (typeof real !== "function") continue;
      p5.prototype[name] = function (...a) { if (sketchCalled()) S.flag(code, name + "()"); return real.apply(this, a); };
    }
  };
  wrapP5(__SALON_BARE__, "bare_primitives");
  wrapP5(__SALON_TEXT__, "text_label");
  wrapP5(__SALON_DOM__, "external_access");
  // Shaders of the sketch's own are refused, not only reported (guard.js says why).
  for (const name of __SALON_SHADERS__) {
    const real = p5.prototype[name];
    if (typeof real !== "function") continue;
    p5.prototype[name] = function (...a) {
      if (sketchCalled()) { S.flag("bare_primitives", name + "()"); throw new TypeError("salon sandbox: " + name + "() is not allowed"); }
      return real.apply(this, a);
    };
  }

  // The canvas is always size x size at pixel density 1, whatever the sketch asks for.
  const realCreateCanvas = p5.prototype.createCanvas;
  p5.prototype.createCanvas = function (w, h, ...rest) { return realCreateCanvas.call(this, S.size, S.size, ...rest); };
  const realDensity = p5.prototype.pixelDensity;
  p5.prototype.pixelDensity = function (v) { return v === undefined ? realDensity.call(this) : realDensity.call(this, 1); };

  p5.registerAddon((p5, fn, lifecycles) => {
    lifecycles.presetup = function () { S.instance = this; this.randomSeed(S.seed); this.noiseSeed(S.seed); };
    lifecycles.postsetup = function () { if (typeof window.draw !== "function") S.finish("ok", this.canvas); };
    lifecycles.postdraw = function () { this.noLoop(); S.finish("ok", this.canvas); };
  });

  const realBrush = window.brush;
  const api = new Set(Object.keys(realBrush));
  window.brush = new Proxy(realBrush, {
    get(t, prop, r) {
      if (typeof prop === "string" && !api.has(prop) && prop !== "then" && prop !== "toJSON") S.flag("unknown_brush_method", "brush." + prop);
      return Reflect.get(t, prop, r);
    },
    set(t, prop) { S.flag("unknown_brush_method", "brush." + String(prop) + " = ..."); return true; },
  });
  S.brushApi = [...api].sort();

  // Called by render.py with the sketch and seed once the page (and libraries) are ready.
  S.start = (code, seed) => {
    S.seed = seed;
    S.reseed(seed);
    S.started = true;
    const el = document.createElement("script");
    el.textContent = code + "\n//# sourceURL=" + SKETCH;
    document.body.appendChild(el);
    if (!S.settled) {
      if (typeof window.setup !== "function" && typeof window.draw !== "function") {
        S.flag("no_sketch", "no setup() or draw() defined");
        S.finish("error", null);
      } else {
        try { new p5(); } catch (e) { S.flag("runtime_error", String(e)); S.finish("error", null); }
      }
    }
    return S.done;
  };
})();
//# sourceURL=salon-start.js
