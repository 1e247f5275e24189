// salon page guard: runs before p5 loads, in every sandbox page.
// It seeds Math.random, wraps every route out of the page (network, DOM, dialogs, popups,
// eval) and every drawing route that bypasses p5.brush, and reports what the sketch tried
// as stable violation codes. Static checks in gate.py see the source; this sees what runs,
// so `window['fe'+'tch']` and `(0, eval)` are caught too. Blocked calls throw or no-op.
(() => {
  "use strict";
  const SKETCH = "salon-sketch.js", GUARD = "salon-guard.js";
  const S = (window.__salon = { violations: new Set(), details: [], errors: [], seed: 0 });
  Error.stackTraceLimit = 40;

  // Mulberry32, reseeded per sketch; p5.brush seeds its own PRNG from Math.random at load.
  let state = 1;
  const random = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  S.reseed = (seed) => { state = seed | 0; };
  Object.defineProperty(Math, "random", { value: random, writable: false, configurable: false });

  const frames = () => String(new Error().stack).split("\n").slice(1).filter((l) => !l.includes(GUARD));
  // Some frame of the sketch is on the stack (the sketch started this, maybe through p5).
  const sketchInStack = () => frames().some((l) => l.includes(SKETCH));
  // The sketch called this directly (not p5 or p5.brush on its behalf).
  const sketchCalled = () => { const f = frames(); return f.length > 0 && f[0].includes(SKETCH); };
  const flag = (code, detail) => {
    S.violations.add(code);
    if (S.details.length < 50) S.details.push(code + ": " + detail);
  };
  S.flag = flag;
  const blocked = (what) => { flag("external_access", what); return new TypeError("salon sandbox: " + what + " is not allowed"); };

  // Network: nothing leaves the page, whoever asks.
  const deny = (obj, name, what) => {
    if (!obj || !(name in obj)) return;
    const f = function () { throw blocked(what || name); };
    try { Object.defineProperty(obj, name, { value: f, writable: false, configurable: false }); } catch (e) { obj[name] = f; }
  };
  window.fetch = function () { return Promise.reject(blocked("fetch")); };
  deny(window, "XMLHttpRequest"); deny(window, "WebSocket"); deny(window, "EventSource");
  deny(window, "Worker"); deny(window, "SharedWorker"); deny(window, "RTCPeerConnection");
  deny(window, "webkitRTCPeerConnection"); deny(window, "BroadcastChannel");
  deny(Navigator.prototype, "sendBeacon"); deny(window, "open", "window.open");
  if (navigator.serviceWorker) deny(Object.getPrototypeOf(navigator.serviceWorker), "register", "serviceWorker");
  for (const name of ["alert", "confirm", "prompt"]) deny(window, name);
  for (const [proto, prop] of [[HTMLImageElement.prototype, "src"], [HTMLImageElement.prototype, "srcset"],
      [HTMLScriptElement.prototype, "src"], [HTMLLinkElement.prototype, "href"], [HTMLIFrameElement.prototype, "src"],
      [HTMLMediaElement.prototype, "src"], [HTMLSourceElement.prototype, "src"], [HTMLFormElement.prototype, "action"]]) {
    Object.defineProperty(proto, prop, { set(v) { if (!String(v).startsWith("data:")) throw blocked(prop + "=" + String(v).slice(0, 80)); }, get() { return ""; } });
  }

  // Code from strings: eval, Function and string timers, when the sketch asks.
  const realEval = window.eval;
  window.eval = function (src) { if (sketchCalled()) throw blocked("eval"); return realEval(src); };
  const RealFunction = Function;
  const GuardedFunction = new Proxy(RealFunction, {
    apply(t, self, args) { if (sketchCalled()) throw blocked("Function"); return Reflect.apply(t, self, args); },
    construct(t, args, nt) { if (sketchCalled()) throw blocked("Function"); return Reflect.construct(t, args); },
  });
  window.Function = GuardedFunction;
  Object.defineProperty(RealFunction.prototype, "constructor", { value: GuardedFunction });
  for (const fn of [async function () {}, function* () {}, async function* () {}]) {
    const proto = Object.getPrototypeOf(fn);
    const Ctor = proto.constructor;
    Object.defineProperty(proto, "constructor", { value: new Proxy(Ctor, {
      apply(t, s, a) { if (sketchCalled()) throw blocked("Function"); return Reflect.apply(t, s, a); },
      construct(t, a) { if (sketchCalled()) throw blocked("Function"); return Reflect.construct(t, a); } }) });
  }
  for (const name of ["setTimeout", "setInterval"]) {
    const real = window[name];
    window[name] = function (cb, ...rest) { if (typeof cb !== "function") throw blocked(name + "(string)"); return real.call(window, cb, ...rest); };
  }

  // DOM writes by the sketch itself (p5 creating its canvas is not the sketch).
  const domWrite = (proto, names) => {
    for (const name of names) {
      const d = Object.getOwnPropertyDescriptor(proto, name);
      if (!d) continue;
      if (typeof d.value === "function") {
        const real = d.value;
        Object.defineProperty(proto, name, { ...d, value: function (...a) { if (sketchCalled()) throw blocked("DOM " + name); return real.apply(this, a); } });
      } else if (d.set) {
        const realSet = d.set;
        Object.defineProperty(proto, name, { ...d, set(v) { if (sketchCalled()) throw blocked("DOM " + name); return realSet.call(this, v); } });
      }
    }
  };
  domWrite(Node.prototype, ["appendChild", "insertBefore", "replaceChild", "removeChild", "textContent", "nodeValue"]);
  domWrite(Element.prototype, ["append", "prepend", "after", "before", "replaceWith", "remove", "insertAdjacentHTML",
    "insertAdjacentElement", "insertAdjacentText", "innerHTML", "outerHTML", "setAttribute", "attachShadow", "replaceChildren"]);
  domWrite(HTMLElement.prototype, ["innerText", "outerText"]);
  domWrite(Document.prototype, ["write", "writeln", "open", "title"]);

  // Text on the canvas by any route the sketch starts.
  for (const C of [window.CanvasRenderingContext2D, window.OffscreenCanvasRenderingContext2D]) {
    if (!C) continue;
    for (const name of ["fillText", "strokeText"]) {
      const real = C.prototype[name];
      C.prototype[name] = function (...a) { if (sketchInStack()) flag("text_label", name); return real.apply(this, a); };
    }
  }

  // GPU resources. On the GPU path a page shares the card with training: a texture bomb would
  // take its memory and a shader of the sketch's own could loop for as long as it likes. Live
  // WebGL bytes (textures, renderbuffers, buffers, drawing buffers) are counted per page and an
  // allocation past S.gpuBudget throws; shader source is only accepted from p5 and p5.brush.
  const GL = [window.WebGLRenderingContext, window.WebGL2RenderingContext].filter(Boolean);
  const held = new WeakMap();  // WebGL object -> bytes it holds
  const bound = new WeakMap();  // context -> {unit, objects bound per target}
  let liveBytes = 0;
  const stateOf = (gl) => { let s = bound.get(gl); if (!s) bound.set(gl, (s = { unit: 0, at: new Map() })); return s; };
  const texKey = (gl, target) => "t" + target + ":" + stateOf(gl).unit;
  const charge = (obj, bytes, what) => {
    if (!obj) return;
    const before = held.get(obj) || 0;
    const budget = S.gpuBudget || 1 << 30;
    if (bytes > before && liveBytes + bytes - before > budget) {
      const mb = (n) => Math.round(n / 1048576);
      flag("runtime_error", "GPU memory budget: " + what + " would hold " + mb(liveBytes + bytes - before) + " MB of " + mb(budget) + " MB");
      throw new RangeError("salon sandbox: GPU memory budget of " + mb(budget) + " MB exceeded by " + what);
    }
    liveBytes += bytes - before;
    held.set(obj, bytes);
  };
  const release = (obj) => { if (obj && held.has(obj)) { liveBytes -= held.get(obj); held.delete(obj); } };
  const perPixel = (type, internal) => (type === 0x1406 || internal === 0x8814 || internal === 0x8815) ? 16
    : (type === 0x140b || type === 0x8d61 || internal === 0x881a || internal === 0x881b) ? 8 : 4;
  const dims = (src) => src ? [src.videoWidth || src.naturalWidth || src.width || 0, src.videoHeight || src.naturalHeight || src.height || 0] : [0, 0];
  const wrapGL = (name, before) => {
    for (const C of GL) {
      const real = C.prototype[name];
      if (typeof real !== "function") continue;
      Object.defineProperty(C.prototype, name, { value: function (...a) { before(this, a); return real.apply(this, a); }, writable: false, configurable: false });
    }
  };
  wrapGL("activeTexture", (gl, a) => { stateOf(gl).unit = a[0]; });
  wrapGL("bindTexture", (gl, a) => { stateOf(gl).at.set(texKey(gl, a[0]), a[1]); });
  wrapGL("bindRenderbuffer", (gl, a) => { stateOf(gl).at.set("r", a[1]); });
  wrapGL("bindBuffer", (gl, a) => { stateOf(gl).at.set("b" + a[0], a[1]); });
  const texTarget = (gl, target) => stateOf(gl).at.get(texKey(gl, target >= 0x8515 && target <= 0x851a ? 0x8513 : target));
  wrapGL("texImage2D", (gl, a) => {
    const [w, h, type, internal] = a.length >= 8 ? [a[3], a[4], a[7], a[2]] : [...dims(a[5]), a[4], a[2]];
    const faces = a[0] >= 0x8515 && a[0] <= 0x851a ? 6 : 1;
    if (a[1] === 0) charge(texTarget(gl, a[0]), w * h * perPixel(type, internal) * faces, "a " + w + "x" + h + " texture");
  });
  wrapGL("texImage3D", (gl, a) => { if (a[1] === 0) charge(texTarget(gl, a[0]), a[3] * a[4] * a[5] * perPixel(a[8], a[2]), "a 3D texture"); });
  wrapGL("texStorage2D", (gl, a) => charge(texTarget(gl, a[0]), a[3] * a[4] * perPixel(0, a[2]) * (a[1] > 1 ? 1.34 : 1), "a " + a[3] + "x" + a[4] + " texture"));
  wrapGL("texStorage3D", (gl, a) => charge(texTarget(gl, a[0]), a[3] * a[4] * a[5] * perPixel(0, a[2]), "a 3D texture"));
  wrapGL("renderbufferStorage", (gl, a) => charge(stateOf(gl).at.get("r"), a[2] * a[3] * 4, "a " + a[2] + "x" + a[3] + " renderbuffer"));
  wrapGL("renderbufferStorageMultisample", (gl, a) => charge(stateOf(gl).at.get("r"), a[1] * a[3] * a[4] * 4, "a multisampled renderbuffer"));
  wrapGL("bufferData", (gl, a) => charge(stateOf(gl).at.get("b" + a[0]), typeof a[1] === "number" ? a[1] : (a[1] && a[1].byteLength) || 0, "a buffer"));
  for (const name of ["deleteTexture", "deleteRenderbuffer", "deleteBuffer"]) wrapGL(name, (gl, a) => release(a[0]));
  wrapGL("shaderSource", (gl, a) => { if (sketchCalled()) { flag("bare_primitives", "shaderSource"); throw new TypeError("salon sandbox: shaders of the sketch's own are not allowed"); } });
  // A 2D or raw WebGL context of the sketch's own bypasses p5.brush; and each WebGL canvas holds a
  // drawing buffer (colour, depth, antialiasing) for as long as the page lives.
  for (const C of [window.HTMLCanvasElement, window.OffscreenCanvas]) {
    if (!C) continue;
    const real = C.prototype.getContext;
    Object.defineProperty(C.prototype, "getContext", { value: function (kind, ...a) {
      if (sketchCalled()) flag("bare_primitives", "getContext(" + kind + ")");
      const ctx = real.call(this, kind, ...a);
      if (ctx && String(kind).startsWith("webgl") && !held.has(ctx)) charge(ctx, this.width * this.height * 12, "a " + this.width + "x" + this.height + " WebGL canvas");
      return ctx;
    }, writable: false, configurable: false });
  }

  // Errors and the result promise.
  let settle;
  S.done = new Promise((r) => { settle = r; });
  S.settled = false;
  S.finish = (status, canvas) => {
    if (S.settled) return;
    S.settled = true;
    let image = null;
    try { if (canvas) image = canvas.toDataURL("image/png"); } catch (e) { S.errors.push("capture: " + e); }
    settle({ status, image, violations: [...S.violations], details: S.details, errors: S.errors.slice(0, 20) });
  };
  const onError = (message, isSyntax) => {
    if (S.errors.length < 20) S.errors.push(String(message).slice(0, 500));
    if (!S.started) return;  // library load problems are infrastructure; render.py reports them
    flag(isSyntax ? "syntax_error" : "runtime_error", String(message).slice(0, 200));
    S.finish("error", S.instance && S.instance.canvas);
  };
  window.addEventListener("error", (e) => onError(e.message || e.error, e.error instanceof SyntaxError));
  window.addEventListener("unhandledrejection", (e) => onError("unhandled rejection: " + (e.reason && e.reason.message || e.reason), false));
  const realConsoleError = console.error.bind(console);
  console.error = (...a) => { if (S.errors.length < 20) S.errors.push(a.map(String).join(" ").slice(0, 500)); realConsoleError(...a); };
})();
//# sourceURL=salon-guard.js
