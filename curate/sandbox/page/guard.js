// salon page guard: the first script of every sandbox page, before p5 loads.
//
// The sketch never runs in this realm's global scope: start.js evaluates it in an SES Compartment
// whose whole world is a frozen facade of p5.brush and of p5's helpers that do not paint
// (facade.js). It cannot name a window, a document, p5, a canvas, a context or a timer, so nothing
// here asks who called. What holds by construction lives outside this file too: the browser has
// no network (its own network namespace, or WebRTC/QUIC/proxy flags: isolation.py), and the page's
// Content Security Policy (assets.py) forbids every connection, worker, frame load, plugin, image
// and font, and lets a string become code only while start.js builds the compartment and
// evaluates the sketch (the Trusted Types default policy below).
//
// What this file adds is about the page's own libraries, which act on the sketch's behalf:
//   - every WebGL allocation and canvas size is charged to the page's GPU budget (p5.brush
//     allocates for the sketch: a huge scale or brush is refused here, whatever asked for it);
//   - after the start, the document may gain or lose only canvases (p5's);
//   - Math.random is seeded;
//   - errors and the result leave the page over a DevTools binding the sketch never sees
//     (pages.py), each as it happens; salon's record of them is the verdict, and the painting is
//     read from an isolated world (capture.py), never here.
(() => {
  "use strict";
  const SIZE = __SALON_SIZE__, GPU_BUDGET = __SALON_GPU_BUDGET__;
  // The channel out: a DevTools binding (Runtime.addBinding, pages.py), taken and removed from
  // the window before anything else runs. Each call is an event at salon's end: what was sent
  // cannot be taken back, and a page that never says "done" is judged by what it did send.
  const BINDING = __SALON_BINDING__;
  const send = window[BINDING];
  delete window[BINDING];
  const stringify = JSON.stringify, apply = Reflect.apply;
  const post = (message) => { if (typeof send === "function") send(stringify(message)); };
  // A reused page's documents share one browsing context, whose name outlives a navigation
  // (render.py): emptied before anything else can run.
  window.name = "";
  // Internal state: in this closure, never on window.
  const I = { errors: [], seed: 0, size: SIZE, started: false, settled: false, evaluating: false };
  const define = (obj, name, value) => Object.defineProperty(obj, name, { value, writable: false, configurable: false });

  // Mulberry32, reseeded per sketch; p5.brush seeds its own PRNG from Math.random at load.
  let state = 1;
  const random = () => {
    state = (state + 0x6d2b79f5) | 0;
    let t = Math.imul(state ^ (state >>> 15), 1 | state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  I.reseed = (seed) => { state = seed | 0; };
  define(Math, "random", random);

  let sent = 0;  // violations posted; the final report carries the count (render.py checks it)
  const told = new Set();  // each distinct line is posted once (a bare loop would repeat it)
  const flag = (code, detail) => {
    const line = code + ": " + String(detail).slice(0, 200);
    if (told.has(line)) return;
    told.add(line);
    if (sent < 500) { sent++; post({ t: "violation", code, detail: line }); }
  };
  I.flag = flag;
  const refuse = (code, what) => { flag(code, what); return new TypeError("salon sandbox: " + what + " is not allowed"); };

  // Code from strings: the policy admits it only through this default policy, and this policy only
  // while start.js makes the compartment and evaluates the sketch in it. A string a library or the
  // compartment's own eval hands over later is refused by the browser (and reported below).
  trustedTypes.createPolicy("default", { createScript: (source) => (I.evaluating ? source : null) });
  document.addEventListener("securitypolicyviolation", (e) => {
    if (I.started) flag("external_access", "blocked by the page's policy (" + e.violatedDirective + "): " + String(e.blockedURI || e.sample || "").slice(0, 100));
  });

  // The document: after the start, only canvases come and go (p5 makes and replaces its own).
  const allowedNode = (n) => n.nodeType === 1 && (n.localName === "canvas" || (n.localName === "main" && [...n.children].every((c) => c.localName === "canvas")));
  const allowedAttr = (n, a) => (n.localName === "canvas" || n.localName === "main") && /^(style|width|height|class|id|tabindex|role|aria-.*|data-.*)$/.test(a);
  const judge = (records) => {
    if (!I.started) return;
    for (const r of records) {
      if (r.type === "childList") {
        for (const n of r.addedNodes) if (!allowedNode(n)) flag("external_access", "DOM write: added " + n.nodeName.toLowerCase());
        for (const n of r.removedNodes) if (!allowedNode(n)) flag("external_access", "DOM write: removed " + n.nodeName.toLowerCase());
      } else if (r.type === "attributes") {
        if (!allowedAttr(r.target, r.attributeName)) flag("external_access", "DOM write: " + r.target.nodeName.toLowerCase() + "[" + r.attributeName + "]");
      } else {
        flag("external_access", "DOM write: text of " + (r.target.parentNode ? r.target.parentNode.nodeName.toLowerCase() : "a node"));
      }
    }
  };
  const observer = new MutationObserver(judge);
  observer.observe(document, { childList: true, subtree: true, attributes: true, characterData: true });
  const takeRecords = MutationObserver.prototype.takeRecords;
  I.flushDom = () => judge(apply(takeRecords, observer, []));

  // GPU memory. On the GPU path a page shares the card with training; on SwiftShader it is the
  // host's memory. Every WebGL allocation (each texture level and face, renderbuffers, buffers,
  // copies, compressed uploads, drawing buffers and their resizes) is charged per page, and one
  // past GPU_BUDGET throws.
  const GL = [window.WebGLRenderingContext, window.WebGL2RenderingContext].filter(Boolean);
  const held = new WeakMap();  // WebGL object or context -> Map(part -> bytes)
  const bound = new WeakMap();  // context -> {unit, objects bound per target}
  let liveBytes = 0;
  const mb = (n) => Math.round(n / 1048576);
  const stateOf = (gl) => { let s = bound.get(gl); if (!s) bound.set(gl, (s = { unit: 0, at: new Map() })); return s; };
  const charge = (obj, part, bytes, what) => {
    if (!obj) return;
    let parts = held.get(obj);
    if (!parts) held.set(obj, (parts = new Map()));
    const before = parts.get(part) || 0;
    bytes = Math.max(0, Number(bytes) || 0);
    if (bytes > before && liveBytes + bytes - before > GPU_BUDGET) {
      flag("runtime_error", "GPU memory budget: " + what + " would hold " + mb(liveBytes + bytes - before) + " MB of " + mb(GPU_BUDGET) + " MB");
      throw new RangeError("salon sandbox: GPU memory budget of " + mb(GPU_BUDGET) + " MB exceeded by " + what);
    }
    liveBytes += bytes - before;
    parts.set(part, bytes);
  };
  const release = (obj) => { const parts = obj && held.get(obj); if (parts) { for (const b of parts.values()) liveBytes -= b; held.delete(obj); } };
  const perPixel = (type, internal) => (type === 0x1406 || internal === 0x8814 || internal === 0x8815) ? 16
    : (type === 0x140b || type === 0x8d61 || internal === 0x881a || internal === 0x881b) ? 8 : 4;
  const dims = (src) => src ? [src.videoWidth || src.naturalWidth || src.displayWidth || src.codedWidth || src.width || 0,
    src.videoHeight || src.naturalHeight || src.displayHeight || src.codedHeight || src.height || 0] : [0, 0];
  const CUBE = (t) => t >= 0x8515 && t <= 0x851a;
  const texAt = (gl, target) => stateOf(gl).at.get("t" + (CUBE(target) ? 0x8513 : target) + ":" + stateOf(gl).unit);
  // One wrapper per method, fixed on the prototype; p5 shadows some methods on its context by
  // assignment, which still ends in this one.
  const wrapGL = (name, before) => {
    for (const C of GL) {
      const real = C.prototype[name];
      if (typeof real !== "function") continue;
      define(C.prototype, name, function (...a) { before(this, a); return apply(real, this, a); });
    }
  };
  wrapGL("activeTexture", (gl, a) => { stateOf(gl).unit = a[0]; });
  wrapGL("bindTexture", (gl, a) => { stateOf(gl).at.set("t" + a[0] + ":" + stateOf(gl).unit, a[1]); });
  wrapGL("bindRenderbuffer", (gl, a) => { stateOf(gl).at.set("r", a[1]); });
  wrapGL("bindBuffer", (gl, a) => { stateOf(gl).at.set("b" + a[0], a[1]); });
  const level = (a) => a[0] + ":" + a[1];  // target (cube face) and mip level
  wrapGL("texImage2D", (gl, a) => {
    const [w, h, type, internal] = a.length >= 8 ? [a[3], a[4], a[7], a[2]] : [...dims(a[5]), a[4], a[2]];
    charge(texAt(gl, a[0]), level(a), w * h * perPixel(type, internal), "a " + w + "x" + h + " texture");
  });
  wrapGL("copyTexImage2D", (gl, a) => charge(texAt(gl, a[0]), level(a), a[5] * a[6] * perPixel(0, a[2]), "a " + a[5] + "x" + a[6] + " texture copy"));
  wrapGL("texImage3D", (gl, a) => charge(texAt(gl, a[0]), level(a), a[3] * a[4] * a[5] * perPixel(a[8], a[2]), "a 3D texture"));
  wrapGL("texStorage2D", (gl, a) => charge(texAt(gl, a[0]), "storage", a[3] * a[4] * perPixel(0, a[2]) * (a[1] > 1 ? 1.34 : 1) * (a[0] === 0x8513 ? 6 : 1), "a " + a[3] + "x" + a[4] + " texture"));
  wrapGL("renderbufferStorage", (gl, a) => charge(stateOf(gl).at.get("r"), "storage", a[2] * a[3] * 4, "a " + a[2] + "x" + a[3] + " renderbuffer"));
  wrapGL("renderbufferStorageMultisample", (gl, a) => charge(stateOf(gl).at.get("r"), "storage", Math.max(1, a[1]) * a[3] * a[4] * 4, "a multisampled renderbuffer"));
  wrapGL("bufferData", (gl, a) => charge(stateOf(gl).at.get("b" + a[0]), "data", typeof a[1] === "number" ? a[1] : (a[1] && a[1].byteLength) || 0, "a buffer"));
  for (const name of ["deleteTexture", "deleteRenderbuffer", "deleteBuffer"]) wrapGL(name, (gl, a) => release(a[0]));
  // Each canvas with a context holds its pixels for as long as it lives, at whatever size its width
  // and height are set to: a WebGL drawing buffer (colour, depth, antialiasing), or a 2D canvas's
  // backing and its copy for display, which sit on the card where Canvas2D is drawn there (the
  // vulkan-canvas path). They are charged to a token per canvas, released when the canvas is
  // collected (p5.brush makes a scratch canvas per mask size and drops the last).
  const pixelsOf = new WeakMap();  // canvas, and its context -> the token its pixels are charged to
  const whenCollected = new FinalizationRegistry(release);
  const chargeCanvas = (canvas, w = canvas.width, h = canvas.height) => {
    const token = pixelsOf.get(canvas);
    if (token) charge(token, "pixels", w * h * token.perPixel, "a " + w + "x" + h + " canvas");
  };
  for (const C of [window.HTMLCanvasElement, window.OffscreenCanvas]) {
    const real = C.prototype.getContext;
    define(C.prototype, "getContext", function (kind, ...a) {
      if (I.makingPainting && this instanceof HTMLCanvasElement) I.madeCanvas = this;  // start.js: createCanvas
      const ctx = apply(real, this, [kind, ...a]);
      if (ctx && !pixelsOf.has(this)) {
        const webgl = String(kind).startsWith("webgl");  // a canvas keeps the kind of its first context
        const token = { webgl, perPixel: webgl ? 12 : 8 };
        pixelsOf.set(this, token);
        pixelsOf.set(ctx, token);
        whenCollected.register(this, token);
        chargeCanvas(this);
      }
      return ctx;
    });
    for (const prop of ["width", "height"]) {
      const d = Object.getOwnPropertyDescriptor(C.prototype, prop);
      // charged before the browser allocates the new drawing buffer, refused if it would not fit
      Object.defineProperty(C.prototype, prop, { ...d, configurable: false, set(v) {
        const n = Math.max(0, Math.floor(Number(v)) || 0);
        chargeCanvas(this, prop === "width" ? n : this.width, prop === "height" ? n : this.height);
        apply(d.set, this, [v]);
      } });
    }
  }

  // Errors and the result. The painting is the canvas p5's createCanvas made (facade.js); salon
  // reads it from an isolated world once "done" arrives (render.py), so nothing here touches it.
  I.finish = (status) => {
    if (I.settled) return;
    I.flushDom();
    I.settled = true;
    const canvas = I.canvas;
    if (canvas && !(pixelsOf.get(canvas) || {}).webgl) flag("not_webgl", "the painting is not on a WebGL canvas");
    post({ t: "done", status, sent, painting: !!canvas, errors: I.errors.slice(0, 20) });
  };
  // An error of the sketch's, as text, without running any of its code: a thrown value may be
  // anything the sketch made (a getter as its message, a proxy).
  const described = (e) => {
    if (e instanceof Error) {
      const own = (k) => { const d = Reflect.getOwnPropertyDescriptor(e, k); return d && typeof d.value === "string" ? d.value : ""; };
      const name = e instanceof ReferenceError ? "ReferenceError" : e instanceof SyntaxError ? "SyntaxError"
        : e instanceof TypeError ? "TypeError" : e instanceof RangeError ? "RangeError" : "Error";
      // the sketch's first frame: the compartment evaluates it as an anonymous script, the page's
      // own scripts are named (assets.py)
      const at = /<anonymous>:(\d+):\d+/.exec(own("stack"));
      return name + ": " + own("message") + (at ? " (line " + at[1] + ")" : "");
    }
    return typeof e === "string" || typeof e === "number" || typeof e === "boolean" ? String(e) : "a thrown " + typeof e;
  };
  // An error's code. A name outside the sketch's world reads as undefined in a compartment (ses's
  // scope), so what the sketch reached for shows in the error that followed: "fetch is not a
  // function", "Cannot read properties of undefined (reading 'document')", or a ReferenceError on
  // assignment; such a name has its own code (facade.js: world.py's NAME_CODES). ses refuses source
  // text that holds an eval( or import( expression before it runs: that is reaching for code.
  const CALLED = /^TypeError: (.+) is not a (?:function|constructor)/;
  const READ = /^(?:ReferenceError: ([\w$]+) is not defined|TypeError: Cannot (?:read|set) properties of (?:undefined|null) \((?:reading|setting) '([\w$]+)'\))/;
  const codeOf = (e, message) => {
    if (/SES_(EVAL|IMPORT)_REJECTED/.test(message)) return "external_access";
    if (e instanceof SyntaxError) return "syntax_error";
    const called = CALLED.exec(message);  // "fetch", "globalThis.fetch", 'brush["watercolour"]'
    if (called) {
      if (/^brush\b/.test(called[1])) return "unknown_brush_method";
      const last = /([\w$]+)\W*$/.exec(called[1]);
      const code = last ? I.codeOfName(last[1]) : "unknown_name";
      return code === "unknown_name" ? "runtime_error" : code;  // a value of the sketch's own that is no function
    }
    const read = READ.exec(message);
    if (read && read[1]) return I.codeOfName(read[1]);
    if (read) { const code = I.codeOfName(read[2]); return code === "unknown_name" ? "runtime_error" : code; }
    return "runtime_error";
  };
  I.onError = (e) => {
    const message = described(e);
    if (I.errors.length < 20) I.errors.push(message.slice(0, 500));
    if (!I.started) return;  // library load problems are infrastructure; render.py reports them
    flag(codeOf(e, message), message.slice(0, 200));
    I.finish("error");
  };
  window.addEventListener("error", (e) => I.onError(e.error === undefined ? e.message : e.error));
  window.addEventListener("unhandledrejection", (e) => I.onError(e.reason));
  const realConsoleError = console.error.bind(console);
  console.error = (...a) => { if (I.errors.length < 20) I.errors.push(a.map(String).join(" ").slice(0, 500)); realConsoleError(...a); };

  // What the page shows the outside (salon's main world; the sketch cannot name it): start() once
  // (render.py), claim() once each by facade.js and start.js, the brush API, the world's names.
  const claimed = new Set();
  define(window, "__salon", Object.freeze({
    claim(who) { if (claimed.has(who)) throw new TypeError("salon sandbox: already claimed"); claimed.add(who); return I; },
    start(seed, source) { if (I.started) throw refuse("external_access", "a second start"); I.started = true; I.start(seed, source); },
    // The painting, for salon to find from outside (render.py); p5's, never one the sketch names.
    get painting() { return I.canvas || null; },
    get brushApi() { return I.brushApi; },
    // The names a sketch's code can use (gate.py checks its own list against this one), and
    // the compartment the last sketch ran in (its globalThis: the reachability test walks it).
    get worldNames() { return I.worldNames(); },
    get compartmentGlobal() { return I.compartmentGlobal || null; },
    isWorld(x) { return I.isWorld(x); },
    get errors() { return I.errors.slice(); },
    get ready() { return typeof I.start === "function" && typeof send === "function" && I.frozen === true; },
  }));
})();
