// salon page start: the last of the page's scripts, after facade.js and ses. Freezes the realm (ses
// lockdown: every JavaScript intrinsic), hardens the sketch's world (facade.js), and on
// __salon.start(seed, source) evaluates the sketch in an SES Compartment whose globals are that
// world and JavaScript's own builtins, then runs p5 with the sketch's setup and draw and reports
// "done" after the last frame (guard.js).
(() => {
  "use strict";
  const I = window.__salon.claim("start");
  const apply = Reflect.apply;
  const FRAMES = __SALON_FRAMES__, FRAME_TIME_MS = __SALON_FRAME_TIME_MS__;

  // p5 2.x shows a spinner (a <style> and a <div>) while setup runs; nobody watches this page,
  // and the document must not change but for canvases. p5 skips it when one is already set.
  p5.prototype._loadingIndicator = { remove() {} };
  // The frame loop: p5 draws the first frame itself; each later one starts as soon as the last
  // has ended (a message, not the display's 60 Hz), until render.frames, the sketch's noLoop(),
  // or FRAME_TIME_MS of drawing, whichever comes first.
  const nextFrame = new MessageChannel();
  nextFrame.port1.onmessage = () => { if (!I.settled) I.instance.redraw().catch(I.onError); };
  p5.registerAddon((p5, fn, lifecycles) => {
    lifecycles.presetup = function () { I.instance = this; this.randomSeed(I.seed); this.noiseSeed(I.seed); };
    lifecycles.postsetup = function () {
      if (!I.draws) { I.finish("ok"); return; }
      this.noLoop();  // p5's own loop stops after its first frame; the rest are nextFrame's
      I.drawingSince = performance.now();
    };
    lifecycles.postdraw = function () {
      if (I.settled) return;
      if (I.stopped || this.frameCount >= FRAMES || performance.now() - I.drawingSince > FRAME_TIME_MS) I.finish("ok");
      else nextFrame.port2.postMessage(0);
    };
  });

  // The frozen realm: every JavaScript intrinsic (prototypes, Math, JSON, Reflect, Function's call
  // and apply...) frozen, shared by the page and every compartment, so nothing the sketch does to
  // them reaches the page's code; then the world, frozen all the way down.
  lockdown({ errorTaming: "unsafe", overrideTaming: "min", consoleTaming: "unsafe", stackFiltering: "verbose",
    evalTaming: "unsafe-eval", mathTaming: "unsafe", dateTaming: "unsafe", localeTaming: "unsafe", reporting: "none" });
  I.harden = harden;
  harden(I.world);
  harden(I.hardenToo);

  // A compartment's global object: JavaScript's builtins (ses gives them), the world, and the live
  // values; not ses's own tools, and nothing may be added to it.
  const compartment = () => {
    I.evaluating = true;  // ses makes its evaluator from a string (guard.js: the Trusted Types policy)
    try {
      const c = new Compartment({ globals: I.world, __options__: true });
      for (const name of ["Compartment", "lockdown", "harden"]) delete c.globalThis[name];
      for (const [name, get] of Object.entries(I.liveValues)) Object.defineProperty(c.globalThis, name, { get, enumerable: true });
      harden(c.globalThis);
      return c;
    } finally { I.evaluating = false; }
  };
  I.worldNames = () => Object.getOwnPropertyNames(compartment().globalThis).sort();

  // setup and draw are what the sketch's code defines: a compartment's evaluation keeps its
  // declarations to itself, so its completion value hands them over.
  const ENTRY = "\n;({ setup: typeof setup === \"function\" ? setup : undefined, draw: typeof draw === \"function\" ? draw : undefined })";
  I.start = (seed, source) => {
    I.seed = seed;
    I.reseed(seed);
    let entry;
    try {
      const c = compartment();
      I.compartmentGlobal = c.globalThis;
      I.evaluating = true;
      try { entry = c.evaluate(String(source) + ENTRY); } finally { I.evaluating = false; }
    } catch (e) {
      I.onError(e);
      return;
    }
    const setup = typeof entry.setup === "function" ? entry.setup : undefined;
    const draw = typeof entry.draw === "function" ? entry.draw : undefined;
    if (!setup && !draw) {
      I.flag("no_sketch", "no setup() or draw() defined");
      I.finish("error");
      return;
    }
    I.draws = !!draw;
    // p5 calls them from the window, as methods of the window: the sketch's own get no `this`.
    Object.defineProperty(window, "setup", { value: setup && (() => apply(setup, undefined, [])) });
    Object.defineProperty(window, "draw", { value: draw && (() => apply(draw, undefined, [])) });
    try { new p5(); } catch (e) { I.onError(e); }
  };
  I.frozen = true;
})();
