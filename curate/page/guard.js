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
  // A 2D or raw WebGL context of the sketch's own bypasses p5.brush.
  for (const C of [window.HTMLCanvasElement, window.OffscreenCanvas]) {
    if (!C) continue;
    const real = C.prototype.getContext;
    C.prototype.getContext = function (kind, ...a) { if (sketchCalled()) flag("bare_primitives", "getContext(" + kind + ")"); return real.call(this, kind, ...a); };
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
