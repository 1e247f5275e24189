// salon page start: runs after p5.brush and ses, before the sketch. Seeds p5 and p5.brush before
// setup, marks completion after setup (or after the first drawn frame when the sketch has
// draw()), wraps the p5 drawing calls and `brush` so the sketch's own bypasses and inventions
// show, and then freezes the realm (ses lockdown) so that nothing this page calls can be changed.
(() => {
  const I = window.__salon.claim();  // the guard's internal state, handed over once
  const apply = Reflect.apply;
  // f, run in the given turn (guard.js: I.mode), whatever turn its caller was in.
  const turn = (mode, f) => function (...a) {
    const before = I.mode;
    I.mode = mode;
    try { return apply(f, this, a); } finally { I.mode = before; }
  };
  const wrapP5 = (names, before) => {
    for (const name of names) {
      const real = p5.prototype[name];
      if (typeof real !== "function") continue;
      p5.prototype[name] = function (...a) { before(name + "()"); return apply(real, this, a); };
    }
  };
  // Paint from p5 itself (its primitives, images, pixels) counts unless it is p5.brush's turn
  // (guard.js: I.mode) and no code of the sketch's made the call: p5.brush calls some of them.
  wrapP5([...__SALON_BARE__, ...__SALON_PIXELS__], (what) => {
    if (I.mode !== "brush" || I.caller() === "sketch") I.flag("bare_primitives", what);
  });
  const flagWhenSketch = (code) => (what) => { if (I.sketchCalled()) I.flag(code, what); };
  wrapP5(__SALON_TEXT__, flagWhenSketch("text_label"));
  wrapP5(__SALON_DOM__, flagWhenSketch("external_access"));
  // Glyphs count whoever draws them: nothing in p5.brush does.
  wrapP5(__SALON_GLYPHS__, (what) => I.text(what));
  // Shaders of the sketch's own are refused, not only reported (guard.js says why).
  wrapP5(__SALON_SHADERS__, (what) => {
    if (I.sketchCalled()) { I.flag("bare_primitives", what); throw new TypeError("salon sandbox: " + what + " is not allowed"); }
  });

  // The paper: background, clear and the canvas itself paint through WebGL on the sketch's call.
  // Their arguments are made plain first (numbers and strings; a colour as its CSS string), so no
  // code of the sketch's (a valueOf, a getter) runs while the paper may paint. Anything else (an
  // image as background) is passed on as it is, and its paint is judged as any other.
  const plainColour = (v) => (typeof v === "number" || typeof v === "string" ? v
    : v instanceof p5.Color ? apply(p5.Color.prototype.toString, v, []) : undefined);
  const paper = (name, plain) => {
    const real = p5.prototype[name];
    p5.prototype[name] = function (...a) {
      const args = plain(a);
      if (!args) return apply(real, this, a);
      I.paperDepth++;
      try { return apply(real, this, args); } finally { I.paperDepth--; }
    };
  };
  const colours = (a) => { const c = a.map(plainColour); return c.includes(undefined) ? null : c; };
  paper("background", colours);
  paper("clear", colours);
  paper("resizeCanvas", () => [I.size, I.size]);
  // The canvas is always size x size at pixel density 1, whatever the sketch asks for.
  const realDensity = p5.prototype.pixelDensity;
  p5.prototype.pixelDensity = function (v) {
    if (v === undefined) return apply(realDensity, this, []);
    I.paperDepth++;
    try { return apply(realDensity, this, [1]); } finally { I.paperDepth--; }
  };
  // The painting is the canvas p5 made last for its first instance (start()'s): the element p5
  // asked a context of while createCanvas ran (guard.js), never the instance's `canvas`, which
  // the sketch can point anywhere.
  // Only the renderer's name is passed on: a canvas element of the sketch's own never becomes p5's.
  const realCreateCanvas = p5.prototype.createCanvas;
  p5.prototype.createCanvas = function (w, h, renderer) {
    const args = typeof renderer === "string" ? [I.size, I.size, renderer] : [I.size, I.size];
    const painting = this === I.instance;
    I.paperDepth++;
    I.makingPainting = painting;  // the guard's getContext notes the canvas p5 gives a context now
    let made;
    try { made = apply(realCreateCanvas, this, args); } finally { I.paperDepth--; I.makingPainting = false; }
    if (painting) I.canvas = I.madeCanvas;
    return made;
  };

  // p5 2.x shows a spinner (a <style> and a <div>) while setup runs; nobody watches this page,
  // and the document must not change but for canvases. p5 skips it when one is already set.
  p5.prototype._loadingIndicator = { remove() {} };
  // The frame hooks registered so far are p5's and p5.brush's own (it composites its layers in
  // them): their paint is p5.brush's. Hooks added later (this page's, or the sketch's) run in the
  // page's turn, where the sketch's code is still the sketch's.
  for (const hooks of Object.values(p5.lifecycleHooks)) hooks.forEach((hook, i) => { hooks[i] = turn("brush", hook); });
  p5.registerAddon((p5, fn, lifecycles) => {
    lifecycles.presetup = function () { if (!I.instance) I.instance = this; this.randomSeed(I.seed); this.noiseSeed(I.seed); };
    lifecycles.postsetup = function () { if (typeof window.draw !== "function") I.finish("ok"); };
    lifecycles.postdraw = function () { this.noLoop(); I.finish("ok"); };
  });

  // brush.*: only its own API (others are unknown_brush_method), each call's arguments made
  // plain before p5.brush sees them: getters, valueOf and proxies of the sketch's run now, in the
  // sketch's name; functions it hands over (a field, a tip) run as the sketch's own code.
  const realBrush = window.brush;
  const api = new Set(Object.keys(realBrush));
  const asSketch = (f) => turn("sketch", f);
  const plain = (v, depth) => {
    if (typeof v === "function") return asSketch(v);
    if (v === null || typeof v !== "object" || depth > 4) return v;
    if (v instanceof p5.Color || v instanceof p5.Vector) return v;
    if (Array.isArray(v)) return Array.from(v, (x) => plain(x, depth + 1));
    if (ArrayBuffer.isView(v)) return v.slice();
    const copy = {};
    // defined, not assigned: an assignment to valueOf or toString would hit the frozen
    // Object.prototype's own (the override mistake) and silently do nothing
    for (const key of Object.keys(v)) Object.defineProperty(copy, key, { value: plain(v[key], depth + 1), writable: true, enumerable: true, configurable: true });
    return copy;
  };
  const wrapped = new Map();
  for (const name of api) {
    const real = realBrush[name];
    if (typeof real === "function") {
      const call = turn("brush", real);
      wrapped.set(name, function (...a) { return apply(call, realBrush, a.map((v) => plain(v, 0))); });
    }
  }
  window.brush = new Proxy(realBrush, {
    get(t, prop, r) {
      if (typeof prop === "string" && !api.has(prop) && prop !== "then" && prop !== "toJSON") I.flag("unknown_brush_method", "brush." + prop);
      return wrapped.get(prop) || Reflect.get(t, prop, r);
    },
    set(t, prop) { I.flag("unknown_brush_method", "brush." + String(prop) + " = ..."); return true; },
  });
  I.brushApi = [...api].sort();

  // Called once by render.py (through __salon.start) when the page is ready; the sketch itself
  // is served to the page as /salon-sketch.js. setup and draw run as the sketch's own code.
  I.start = async (seed) => {
    I.seed = seed;
    I.reseed(seed);
    await I.loadSketch();
    if (I.settled) return;
    if (typeof window.setup !== "function" && typeof window.draw !== "function") {
      I.flag("no_sketch", "no setup() or draw() defined");
      I.finish("error");
      return;
    }
    // p5 calls these from the window, read afresh each time: each is locked to its version as
    // it is now, run in the sketch's turn, so that no later assignment (a bound native as draw)
    // becomes p5's own call.
    for (const name of __SALON_CALLBACKS__) {
      const f = window[name];
      Object.defineProperty(window, name, { value: typeof f === "function" ? asSketch(f) : undefined, writable: false });
    }
    try { new p5(); } catch (e) { I.flag("runtime_error", String(e)); I.finish("error"); }
  };

  // The frozen realm: every JavaScript intrinsic (prototypes, Math, JSON, Reflect, Function's
  // call and apply...) frozen, so what this page calls after this line is what it was before the
  // sketch. The stack hook is the one exception lockdown leaves writable: put back before every
  // read. p5's own classes are not frozen (p5 changes its prototypes as it runs): a method of
  // theirs the sketch replaces with code of its own is still the sketch's frame on the stack.
  lockdown({ errorTaming: "unsafe", overrideTaming: "min", consoleTaming: "unsafe", stackFiltering: "verbose",
    evalTaming: "unsafe-eval", mathTaming: "unsafe", dateTaming: "unsafe", localeTaming: "unsafe", reporting: "none" });
  const stackHook = Reflect.getOwnPropertyDescriptor(Error, "prepareStackTrace");
  I.resetStacks = stackHook && stackHook.set ? () => apply(stackHook.set, Error, [undefined]) : () => {};
  I.frozen = true;
})();
