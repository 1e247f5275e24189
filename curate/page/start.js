// salon page start: runs after p5.brush, before the sketch. Seeds p5 and p5.brush before
// setup, marks completion after setup (or after the first drawn frame when the sketch has
// draw()), captures the canvas in that same task (the WebGL back buffer is gone a frame later),
// and wraps the p5 drawing calls and `brush` so the sketch's own bypasses and inventions show.
(() => {
  const I = window.__salon.claim();  // the guard's internal state, handed over once
  // Above zero while a brush.* call runs (and not inside a callback of the sketch's that brush
  // calls): p5 drawing then comes from p5.brush, and the stack need not be read. Reading it
  // costs microseconds, and p5.brush makes thousands of p5 calls per painting.
  let inBrush = 0;
  const sketchCalled = () => inBrush === 0 && I.sketchCalled();
  const wrapP5 = (names, code) => {
    for (const name of names) {
      const real = p5.prototype[name];
      if (typeof real !== "function") continue;
      p5.prototype[name] = function (...a) { if (sketchCalled()) I.flag(code, name + "()"); return real.apply(this, a); };
    }
  };
  // p5.brush calls p5's primitives on the sketch's behalf, so these count only when the sketch
  // itself calls them.
  wrapP5(__SALON_BARE__, "bare_primitives");
  wrapP5(__SALON_TEXT__, "text_label");
  wrapP5(__SALON_DOM__, "external_access");
  // Glyphs count whoever draws them: nothing in p5.brush does.
  for (const name of __SALON_GLYPHS__) {
    const real = p5.prototype[name];
    if (typeof real !== "function") continue;
    p5.prototype[name] = function (...a) { I.text(name + "()"); return real.apply(this, a); };
  }
  // Shaders of the sketch's own are refused, not only reported (guard.js says why).
  for (const name of __SALON_SHADERS__) {
    const real = p5.prototype[name];
    if (typeof real !== "function") continue;
    p5.prototype[name] = function (...a) {
      if (sketchCalled()) { I.flag("bare_primitives", name + "()"); throw new TypeError("salon sandbox: " + name + "() is not allowed"); }
      return real.apply(this, a);
    };
  }

  // The canvas is always size x size at pixel density 1, whatever the sketch asks for.
  const realCreateCanvas = p5.prototype.createCanvas;
  // The painting is the canvas p5 made last, remembered here: the capture never asks the p5
  // instance, whose `canvas` the sketch can point anywhere.
  p5.prototype.createCanvas = function (w, h, ...rest) {
    const made = realCreateCanvas.call(this, I.size, I.size, ...rest);
    I.canvas = this.canvas;
    return made;
  };
  const realDensity = p5.prototype.pixelDensity;
  p5.prototype.pixelDensity = function (v) { return v === undefined ? realDensity.call(this) : realDensity.call(this, 1); };

  // p5 2.x shows a spinner (a <style> and a <div>) while setup runs; nobody watches this page,
  // and the document must not change but for canvases. p5 skips it when one is already set.
  p5.prototype._loadingIndicator = { remove() {} };
  p5.registerAddon((p5, fn, lifecycles) => {
    lifecycles.presetup = function () { this.randomSeed(I.seed); this.noiseSeed(I.seed); };
    lifecycles.postsetup = function () { if (typeof window.draw !== "function") I.finish("ok"); };
    lifecycles.postdraw = function () { this.noLoop(); I.finish("ok"); };
  });

  const realBrush = window.brush;
  const api = new Set(Object.keys(realBrush));
  const asSketch = (f) => typeof f !== "function" ? f : new Proxy(f, {
    apply(t, self, a) { const saved = inBrush; inBrush = 0; try { return Reflect.apply(t, self, a); } finally { inBrush = saved; } },
  });
  const inside = (f) => new Proxy(f, {
    apply(t, self, a) { inBrush++; try { return Reflect.apply(t, self === window.brush ? realBrush : self, a.map(asSketch)); } finally { inBrush--; } },
    construct(t, a, nt) { inBrush++; try { return Reflect.construct(t, a.map(asSketch), nt); } finally { inBrush--; } },
  });
  const wrapped = new Map();
  window.brush = new Proxy(realBrush, {
    get(t, prop, r) {
      if (typeof prop === "string" && !api.has(prop) && prop !== "then" && prop !== "toJSON") I.flag("unknown_brush_method", "brush." + prop);
      const value = Reflect.get(t, prop, r);
      if (typeof value !== "function") return value;
      if (!wrapped.has(prop)) wrapped.set(prop, inside(value));
      return wrapped.get(prop);
    },
    set(t, prop) { I.flag("unknown_brush_method", "brush." + String(prop) + " = ..."); return true; },
  });
  I.brushApi = [...api].sort();

  // Called once by render.py (through __salon.start) when the page is ready; the sketch itself
  // is served to the page as /salon-sketch.js.
  I.start = async (seed) => {
    I.seed = seed;
    I.reseed(seed);
    await I.loadSketch();
    if (!I.settled) {
      if (typeof window.setup !== "function" && typeof window.draw !== "function") {
        I.flag("no_sketch", "no setup() or draw() defined");
        I.finish("error");
      } else {
        try { new p5(); } catch (e) { I.flag("runtime_error", String(e)); I.finish("error"); }
      }
    }
    return I.done;
  };
})();
