// salon page start: runs after p5.brush, before the sketch. Seeds p5 and p5.brush before
// setup, marks completion after setup (or after the first drawn frame when the sketch has
// draw()), captures the canvas in that same task (the WebGL back buffer is gone a frame later),
// and wraps the p5 drawing calls and `brush` so the sketch's own bypasses and inventions show.
(() => {
  const I = window.__salon.claim();  // the guard's internal state, handed over once
  // Who called is read from the stack on every call (guard.js: I.sketchCalled), whatever is
  // running around it: sketch code that p5.brush runs (an option's valueOf, a getter, a callback)
  // is the sketch's.
  const wrapP5 = (names, before) => {
    for (const name of names) {
      const real = p5.prototype[name];
      if (typeof real !== "function") continue;
      p5.prototype[name] = function (...a) { before(name + "()"); return real.apply(this, a); };
    }
  };
  const flagWhenSketch = (code) => (what) => { if (I.sketchCalled()) I.flag(code, what); };
  // p5.brush calls p5's primitives on the sketch's behalf, so these count only when the sketch
  // itself calls them.
  wrapP5(__SALON_BARE__, flagWhenSketch("bare_primitives"));
  wrapP5(__SALON_TEXT__, flagWhenSketch("text_label"));
  wrapP5(__SALON_DOM__, flagWhenSketch("external_access"));
  // Glyphs count whoever draws them: nothing in p5.brush does.
  wrapP5(__SALON_GLYPHS__, (what) => I.text(what));
  // Shaders of the sketch's own are refused, not only reported (guard.js says why).
  wrapP5(__SALON_SHADERS__, (what) => {
    if (I.sketchCalled()) { I.flag("bare_primitives", what); throw new TypeError("salon sandbox: " + what + " is not allowed"); }
  });

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
  window.brush = new Proxy(realBrush, {
    get(t, prop, r) {
      if (typeof prop === "string" && !api.has(prop) && prop !== "then" && prop !== "toJSON") I.flag("unknown_brush_method", "brush." + prop);
      return Reflect.get(t, prop, r);
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
