// salon page guard: the first script of every sandbox page, before p5 loads.
//
// What holds by construction lives outside this file: the browser has no network (its own
// network namespace, or WebRTC/QUIC/proxy flags: isolation.py), and the page's Content Security
// Policy (render.py) forbids, in this realm and in any realm it could create, every connection,
// worker, frame load, plugin, image, font, string-to-code (eval, Function, string timers, script
// text) and string-to-HTML sink. This file adds the rules the browser cannot state, judged by
// what happens, never by who is on the call stack:
//   - after the sketch starts, any glyph drawing is text_label (p5.brush draws no text);
//   - after the sketch starts, the document may gain or lose only canvases (p5's): a
//     MutationObserver over the whole tree reports anything else, and nodes that would bring a
//     new realm (frames, objects, embeds) or a shadow tree are refused before they exist;
//   - every WebGL allocation is charged to the page's GPU budget;
//   - Math.random is seeded, and nothing the sketch can reach changes the verdict's state.
// Everything it reports is a stable violation code (gate.py). Blocked calls throw.
//
// The realm is the sketch's too, so nothing here trusts what the sketch could change: every
// JavaScript intrinsic is frozen (ses lockdown, at the end of start.js) before the sketch runs,
// the DOM and WebGL functions this file calls are the ones it kept before any sketch ran, each
// violation leaves the page as it happens over a DevTools binding the sketch never sees
// (pages.py), and the painting is read by salon from an isolated world (render.py), never here.
(() => {
  "use strict";
  const SKETCH = "salon-sketch.js", GUARD = "salon-guard.js", START = "salon-start.js";
  const BRUSH = "/p5.brush.js", P5 = "/p5.min.js";
  const SIZE = __SALON_SIZE__, GPU_BUDGET = __SALON_GPU_BUDGET__;
  // The channel out: a DevTools binding (Runtime.addBinding, pages.py), taken and removed from
  // the window before anything else runs. Each call is an event at salon's end: what was sent
  // cannot be taken back, and a page that never says "done" is judged by what it did send.
  const BINDING = __SALON_BINDING__;
  const send = window[BINDING];
  delete window[BINDING];
  const stringify = JSON.stringify, E = Error, apply = Reflect.apply;
  const post = (message) => { if (typeof send === "function") send(stringify(message)); };
  // A value of the sketch's, named without running any of its code (no toString, no getter).
  const named = (v) => (typeof v === "string" ? v : typeof v === "number" || typeof v === "boolean" ? String(v) : "a " + typeof v);
  // A reused page's documents share one browsing context, whose name outlives a navigation
  // (render.py): emptied before anything else can run.
  window.name = "";
  // Internal state: in this closure, never on window. The verdict itself is salon's record of what
  // was posted (pages.py), not state of the page's.
  const I = { errors: [], seed: 0, size: SIZE, started: false, settled: false,
    own: new WeakSet(), mode: "page", paperDepth: 0 };  // own: nodes this page inserts itself (the sketch's script element)
  const define = (obj, name, value) => Object.defineProperty(obj, name, { value, writable: false, configurable: false });
  // A prototype's method fixed for good, that an instance may still shadow with one of its own by
  // assignment (p5 wraps some of its WebGL context's methods so): the shadow still ends in this one.
  const overridable = (proto, name, value) => Object.defineProperty(proto, name, { configurable: false, get() { return value; },
    set(v) {
      if (this === proto) throw new TypeError("salon sandbox: " + name + " is fixed");
      Object.defineProperty(this, name, { value: v, writable: true, enumerable: true, configurable: true });
    } });
  // Fixed, so a sketch cannot empty the stacks every "who called" check reads (stackTraceLimit = 0).
  // The caller is at most the sixth frame of such a stack (frames(), I.caller, a check and a
  // wrapper or two of this page's); 16 leaves room and keeps the check cheap, since it runs on
  // every p5 primitive and WebGL paint call p5.brush makes.
  define(Error, "stackTraceLimit", 16);

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

  // Who called, read from a stack only this page can shape: its depth is fixed above, the
  // sketch's own sourceURL comments are defused before it is served (pages.py), and the stack
  // hook (Error.prepareStackTrace) is put back to lockdown's own before every read (start.js sets
  // I.resetStacks). The page's own frames (this file and start.js) are never the caller, nor are
  // native frames (Array.prototype.forEach, a bound function).
  I.resetStacks = () => {};
  const frames = () => {
    I.resetStacks();
    return String(new E().stack).split("\n").slice(1).filter((l) => l.includes("://") && !l.includes(GUARD) && !l.includes(START));
  };
  // The sketch called this itself: its frame is the first, or no script frame is there at all
  // (a bound function a timer or promise called). Used where p5 makes the same call on the
  // sketch's behalf (2D contexts, shaders, bitmaps), never for text, DOM or network.
  I.sketchCalled = () => { const f = frames(); return f.length === 0 || f[0].includes(SKETCH); };
  // Whose paint this is: the innermost frame of the sketch or of p5.brush decides (sketch code
  // that p5.brush runs, an option's valueOf or a getter, is the sketch's); with neither, "p5" when
  // p5's own code is running (its frame loop), else "none" (a bare native a timer called).
  I.caller = () => {
    let p5 = false;
    for (const l of frames()) {
      if (l.includes(SKETCH)) return "sketch";
      if (l.includes(BRUSH)) return "brush";
      if (l.includes(P5)) p5 = true;
    }
    return p5 ? "p5" : "none";
  };
  // Whose turn it is (start.js keeps it): "brush" inside a brush.* call or one of p5.brush's own
  // frame hooks, "sketch" inside setup, draw or a function the sketch handed to p5.brush, "page"
  // otherwise (p5's frame loop, the page's own code, and anything a timer or promise runs).
  // Paint may reach the canvas from the paper (background, clear, the canvas itself: start.js),
  // from p5.brush's turn and from p5's own code in the page's, never from the sketch's code.
  I.paintAllowed = () => {
    if (I.paperDepth > 0) return true;
    if (I.mode === "sketch") return false;
    const who = I.caller();
    return I.mode === "brush" ? who !== "sketch" : who === "brush" || who === "p5";
  };
  let sent = 0;  // violations posted; the final report carries the count (render.py checks it)
  const told = new Set();  // each distinct line is posted once (a bare loop would repeat it)
  const flag = (code, detail) => {
    const line = code + ": " + named(detail).slice(0, 200);
    if (told.has(line)) return;
    told.add(line);
    if (sent < 500) { sent++; post({ t: "violation", code, detail: line }); }
  };
  I.flag = flag;
  const refuse = (code, what) => { flag(code, what); return new TypeError("salon sandbox: " + what + " is not allowed"); };
  const blocked = (what) => refuse("external_access", what);

  // Network: the browser has none; these only name what was tried (a CSP report would too).
  const deny = (obj, name, what) => {
    if (!obj || !(name in obj)) return;
    const f = function () { throw blocked(what || name); };
    try { define(obj, name, f); } catch (e) { obj[name] = f; }
  };
  define(window, "fetch", function () { return Promise.reject(blocked("fetch")); });
  for (const name of ["XMLHttpRequest", "WebSocket", "WebSocketStream", "WebTransport", "EventSource", "Worker",
    "SharedWorker", "RTCPeerConnection", "webkitRTCPeerConnection", "RTCDataChannel", "BroadcastChannel",
    "alert", "confirm", "prompt"]) deny(window, name);
  deny(window, "open", "window.open");
  deny(Navigator.prototype, "sendBeacon");
  if (navigator.serviceWorker) deny(Object.getPrototypeOf(navigator.serviceWorker), "register", "serviceWorker");
  document.addEventListener("securitypolicyviolation", (e) => {
    if (I.started) flag("external_access", "blocked by the page's policy (" + e.violatedDirective + "): " + String(e.blockedURI || e.sample || "").slice(0, 100));
  });

  // Code from strings: the policy forbids eval in every realm; this names the attempt, and code
  // that would have drawn text is text_label too, whichever job handed it over.
  const GLYPHS = new RegExp("\\b(" + [...__SALON_GLYPHS__, "fillText", "strokeText"].join("|") + ")\\b");
  const fromString = (what, args) => {
    const refused = blocked(what);  // first: the sketch's own toString below may throw
    if (args.some((a) => GLYPHS.test(String(a)))) flag("text_label", what + " of code that draws text");
    return refused;
  };
  const realEval = window.eval;
  define(window, "eval", function (src) { if (I.started) throw fromString("eval", [src]); return realEval(src); });
  const guardCtor = (Ctor) => new Proxy(Ctor, {
    apply(t, self, args) { if (I.started) throw fromString("Function", args); return Reflect.apply(t, self, args); },
    construct(t, args) { if (I.started) throw fromString("Function", args); return Reflect.construct(t, args); },
  });
  const GuardedFunction = guardCtor(Function);
  define(window, "Function", GuardedFunction);
  // Left configurable: lockdown (start.js) replaces these with inert constructors of its own.
  const replaceable = (obj, name, value) => Object.defineProperty(obj, name, { value, writable: false, configurable: true });
  replaceable(Function.prototype, "constructor", GuardedFunction);
  for (const fn of [async function () {}, function* () {}, async function* () {}]) {
    const proto = Object.getPrototypeOf(fn);
    replaceable(proto, "constructor", guardCtor(proto.constructor));
  }
  for (const name of ["setTimeout", "setInterval"]) {
    const real = window[name];
    define(window, name, function (cb, ...rest) { if (typeof cb !== "function") throw fromString(name + "(string)", [cb]); return real.call(window, cb, ...rest); });
  }

  // The document: after the start, only canvases come and go (p5 makes and replaces its own).
  const REALMS = "iframe,frame,frameset,object,embed,portal,fencedframe";
  const bringsRealm = (n) => !!n && typeof n === "object" && (n.nodeType === 1 || n.nodeType === 11) &&
    ((n.matches && n.matches(REALMS)) || !!(n.querySelector && n.querySelector(REALMS)));
  const allowedNode = (n) => I.own.has(n) || n.nodeType === 1 && (n.localName === "canvas" || (n.localName === "main" && [...n.children].every((c) => c.localName === "canvas")));
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
  // A new realm (a frame's window, an object's document) is refused before it exists: its
  // globals would be untouched by this file. Whatever method inserts it, whoever calls.
  const INSERTERS = [[Node.prototype, ["appendChild", "insertBefore", "replaceChild"]],
    [Element.prototype, ["append", "prepend", "after", "before", "replaceWith", "insertAdjacentElement", "replaceChildren", "moveBefore"]],
    [CharacterData.prototype, ["after", "before", "replaceWith"]], [DocumentType.prototype, ["after", "before", "replaceWith"]],
    [Document.prototype, ["append", "prepend", "replaceChildren", "moveBefore", "adoptNode", "importNode"]],
    [DocumentFragment.prototype, ["append", "prepend", "replaceChildren", "moveBefore"]],
    [Range.prototype, ["insertNode", "surroundContents"]]];
  for (const [proto, names] of INSERTERS) {
    for (const name of names) {
      const real = proto[name];
      if (typeof real !== "function") continue;
      define(proto, name, function (...a) {
        if (I.started && a.some(bringsRealm)) throw blocked("a new realm (" + name + " of a frame, object or embed)");
        return real.apply(this, a);
      });
    }
  }
  const realAttachShadow = Element.prototype.attachShadow;
  define(Element.prototype, "attachShadow", function (...a) { if (I.started) throw blocked("attachShadow (a tree the observer cannot see)"); return realAttachShadow.apply(this, a); });
  for (const name of ["write", "writeln", "open"]) deny(Document.prototype, name, "document." + name);
  for (const [proto, prop] of [[HTMLImageElement.prototype, "src"], [HTMLImageElement.prototype, "srcset"],
      [HTMLLinkElement.prototype, "href"], [HTMLIFrameElement.prototype, "src"], [HTMLIFrameElement.prototype, "srcdoc"],
      [HTMLMediaElement.prototype, "src"], [HTMLSourceElement.prototype, "src"], [HTMLFormElement.prototype, "action"]]) {
    Object.defineProperty(proto, prop, { set(v) { throw blocked(prop + "=" + named(v).slice(0, 80)); }, get() { return ""; }, configurable: false });
  }

  // Text: any glyph drawing in any 2D context after the start, whoever asks.
  I.text = (what) => { if (I.started) throw refuse("text_label", what); };
  for (const C of [window.CanvasRenderingContext2D, window.OffscreenCanvasRenderingContext2D]) {
    if (!C) continue;
    for (const name of Object.getOwnPropertyNames(C.prototype)) {
      const d = Object.getOwnPropertyDescriptor(C.prototype, name);
      // fillText, strokeText, and whatever draws text or elements next (drawFormattedText, drawElement...)
      if (typeof d.value !== "function" || name === "measureText" || !/text|element|formatted/i.test(name)) continue;
      const real = d.value;
      define(C.prototype, name, function (...a) { I.text(name); return real.apply(this, a); });
    }
  }

  // GPU memory. On the GPU path a page shares the card with training; on SwiftShader it is the
  // host's memory. Every WebGL allocation (each texture level and face, renderbuffers, buffers,
  // copies, compressed uploads, drawing buffers and their resizes) is charged per page, and one
  // past GPU_BUDGET throws. Shader source is only accepted from p5 and p5.brush.
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
  // Losing the context on purpose leaves nothing to capture; neither p5 nor p5.brush asks.
  for (const C of GL) {
    const real = C.prototype.getExtension;
    define(C.prototype, "getExtension", function (asked) {
      const name = String(asked);  // once: a toString of the sketch's could answer differently the second time
      if (/lose_context/i.test(name)) { flag("bare_primitives", "getExtension(" + name.slice(0, 40) + ")"); return null; }
      return real.call(this, name);
    });
  }
  // One wrapper per method; each check registered for it runs before the real call, in order,
  // and a check that answers SKIP keeps the call from happening at all.
  const SKIP = {};
  const glChecks = new Map();
  const wrapGL = (name, before) => {
    if (glChecks.has(name)) { glChecks.get(name).push(before); return; }
    const checks = [before];
    glChecks.set(name, checks);
    for (const C of GL) {
      const real = C.prototype[name];
      if (typeof real !== "function") continue;
      overridable(C.prototype, name, function (...a) {
        for (const check of checks) if (check(this, a) === SKIP) return undefined;
        return apply(real, this, a);
      });
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
  wrapGL("compressedTexImage2D", (gl, a) => charge(texAt(gl, a[0]), level(a), Math.max(a[3] * a[4], (a[6] && a[6].byteLength) || a[6] || 0), "a compressed texture"));
  wrapGL("texImage3D", (gl, a) => charge(texAt(gl, a[0]), level(a), a[3] * a[4] * a[5] * perPixel(a[8], a[2]), "a 3D texture"));
  wrapGL("compressedTexImage3D", (gl, a) => charge(texAt(gl, a[0]), level(a), Math.max(a[3] * a[4] * a[5], (a[7] && a[7].byteLength) || a[7] || 0), "a compressed 3D texture"));
  wrapGL("texStorage2D", (gl, a) => charge(texAt(gl, a[0]), "storage", a[3] * a[4] * perPixel(0, a[2]) * (a[1] > 1 ? 1.34 : 1) * (a[0] === 0x8513 ? 6 : 1), "a " + a[3] + "x" + a[4] + " texture"));
  wrapGL("texStorage3D", (gl, a) => charge(texAt(gl, a[0]), "storage", a[3] * a[4] * a[5] * perPixel(0, a[2]) * (a[1] > 1 ? 1.34 : 1), "a 3D texture"));
  wrapGL("renderbufferStorage", (gl, a) => charge(stateOf(gl).at.get("r"), "storage", a[2] * a[3] * 4, "a " + a[2] + "x" + a[3] + " renderbuffer"));
  wrapGL("renderbufferStorageMultisample", (gl, a) => charge(stateOf(gl).at.get("r"), "storage", Math.max(1, a[1]) * a[3] * a[4] * 4, "a multisampled renderbuffer"));
  wrapGL("bufferData", (gl, a) => charge(stateOf(gl).at.get("b" + a[0]), "data", typeof a[1] === "number" ? a[1] : (a[1] && a[1].byteLength) || 0, "a buffer"));
  wrapGL("drawingBufferStorage", (gl, a) => charge(pixelsOf.get(gl), "pixels", a[1] * a[2] * 12, "a " + a[1] + "x" + a[2] + " drawing buffer"));
  for (const name of ["deleteTexture", "deleteRenderbuffer", "deleteBuffer"]) wrapGL(name, (gl, a) => release(a[0]));
  // Paint: whatever draws into, clears, scissors, blits or uploads to a WebGL context counts only
  // from p5.brush, the paper and p5's own frame loop (I.paintAllowed); the sketch's own, straight
  // or through drawingContext, _renderer, a p5 helper or a bound function, is bare_primitives,
  // and never happens. It is skipped, not thrown: p5 stays whole, so the painting p5.brush made
  // is still there to see beside the verdict.
  for (const name of __SALON_GL_PAINT__) {
    wrapGL(name, () => {
      if (!I.started || I.paintAllowed()) return undefined;
      flag("bare_primitives", "WebGL " + name + " outside p5.brush");
      return SKIP;
    });
  }
  wrapGL("shaderSource", () => { if (I.sketchCalled()) { flag("bare_primitives", "shaderSource"); throw new TypeError("salon sandbox: shaders of the sketch's own are not allowed"); } });
  // Each canvas with a context holds its pixels for as long as it lives, at whatever size its width
  // and height are set to: a WebGL drawing buffer (colour, depth, antialiasing), or a 2D canvas's
  // backing and its copy for display, which sit on the card where Canvas2D is drawn there (the
  // vulkan-canvas path). They are charged to a token per canvas, released when the canvas is
  // collected (p5.brush makes a scratch canvas per mask size and drops the last). A 2D or raw
  // WebGL context of the sketch's own bypasses p5.brush.
  const pixelsOf = new WeakMap();  // canvas, and its context -> the token its pixels are charged to
  const whenCollected = window.FinalizationRegistry ? new FinalizationRegistry(release) : null;
  const onCollect = whenCollected && FinalizationRegistry.prototype.register.bind(whenCollected);
  const chargeCanvas = (canvas, w = canvas.width, h = canvas.height) => {
    const token = pixelsOf.get(canvas);
    if (token) charge(token, "pixels", w * h * token.perPixel, "a " + w + "x" + h + " canvas");
  };
  for (const C of [window.HTMLCanvasElement, window.OffscreenCanvas]) {
    if (!C) continue;
    const real = C.prototype.getContext;
    define(C.prototype, "getContext", function (asked, ...a) {
      const kind = String(asked);  // once, as getExtension's name
      if (I.makingPainting && this instanceof HTMLCanvasElement) I.madeCanvas = this;  // start.js: createCanvas
      else if (I.sketchCalled()) flag("bare_primitives", "getContext(" + kind + ")");
      const ctx = real.call(this, kind, ...a);
      if (ctx && !pixelsOf.has(this)) {
        const webgl = kind.startsWith("webgl");  // a canvas keeps the kind of its first context
        const token = { webgl, perPixel: webgl ? 12 : 8 };
        pixelsOf.set(this, token);
        pixelsOf.set(ctx, token);
        if (onCollect) onCollect(this, token);
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
        d.set.call(this, v);
      } });
    }
  }

  // Every ImageBitmap is a copy of its source's pixels (on the card where the source is), held
  // until closed or collected: a loop of createImageBitmap or transferToImageBitmap would hoard them.
  const bitmapDims = (src, a) => (a.length >= 4 ? [a[2], a[3]] : dims(src));
  const bitmaps = new WeakMap();  // ImageBitmap -> the token its pixels are charged to
  // The token a new bitmap of w x h is charged to, before the browser makes it.
  const bitmapToken = (what, w, h) => {
    if (I.sketchCalled()) flag("bare_primitives", what);
    const token = {};
    charge(token, "bitmap", Math.abs(w * h) * 4, "a " + w + "x" + h + " image bitmap");
    return token;
  };
  const heldAs = (bitmap, token) => { bitmaps.set(bitmap, token); if (onCollect) onCollect(bitmap, token); return bitmap; };
  if (window.createImageBitmap) {
    const real = window.createImageBitmap;
    define(window, "createImageBitmap", function (src, ...a) {
      const token = bitmapToken("createImageBitmap", ...bitmapDims(src, a));
      return real.call(this, src, ...a).then((bitmap) => heldAs(bitmap, token));
    });
  }
  if (window.OffscreenCanvas && OffscreenCanvas.prototype.transferToImageBitmap) {
    const real = OffscreenCanvas.prototype.transferToImageBitmap;
    define(OffscreenCanvas.prototype, "transferToImageBitmap", function () {
      const token = bitmapToken("transferToImageBitmap", this.width, this.height);
      return heldAs(real.call(this), token);
    });
  }
  if (window.ImageBitmap) {
    const real = ImageBitmap.prototype.close;
    define(ImageBitmap.prototype, "close", function () { release(bitmaps.get(this)); return real.call(this); });
  }
  // Other holders of pixels or GPU work that a p5.brush painting never needs are refused outright:
  // video frames and codecs (a VideoFrame of a canvas is a copy of it, on the card where the canvas
  // is), canvas streams and recorders, and WebGPU (absent from this insecure origin anyway: its
  // compute shaders would hold the card as a looping WebGL shader would).
  for (const name of ["VideoFrame", "VideoEncoder", "VideoDecoder", "ImageDecoder", "AudioEncoder", "AudioDecoder",
    "MediaRecorder", "MediaStreamTrackProcessor", "MediaStreamTrackGenerator", "VideoTrackGenerator"]) {
    if (name in window) define(window, name, function () { throw refuse("bare_primitives", name); });
  }
  for (const C of [window.HTMLCanvasElement, window.HTMLMediaElement]) {
    if (C && C.prototype.captureStream) define(C.prototype, "captureStream", function () { throw refuse("bare_primitives", "captureStream"); });
  }
  if ("gpu" in Navigator.prototype) {
    Object.defineProperty(Navigator.prototype, "gpu", { get() { throw refuse("bare_primitives", "WebGPU"); }, configurable: false });
  }

  // Errors and the result. The painting is the canvas p5's createCanvas made (start.js); salon
  // reads it from an isolated world once "done" arrives (render.py), so nothing here touches it.
  I.finish = (status) => {
    if (I.settled) return;
    I.flushDom();
    I.settled = true;
    const canvas = I.canvas;
    if (canvas && !(pixelsOf.get(canvas) || {}).webgl) flag("not_webgl", "the painting is not on a WebGL canvas");
    post({ t: "done", status, sent, painting: !!canvas, errors: I.errors.slice(0, 20) });
  };
  const onError = (message, isSyntax) => {
    if (I.errors.length < 20) I.errors.push(String(message).slice(0, 500));
    if (!I.started) return;  // library load problems are infrastructure; render.py reports them
    flag(isSyntax ? "syntax_error" : "runtime_error", String(message).slice(0, 200));
    I.finish("error");
  };
  window.addEventListener("error", (e) => onError(e.message || e.error, e.error instanceof SyntaxError));
  window.addEventListener("unhandledrejection", (e) => onError("unhandled rejection: " + (e.reason && e.reason.message || e.reason), false));
  const realConsoleError = console.error.bind(console);
  console.error = (...a) => { if (I.errors.length < 20) I.errors.push(a.map(String).join(" ").slice(0, 500)); realConsoleError(...a); };

  // The sketch is a script of the page's own server, fetched once (render.py serves it one time): the policy
  // allows no inline or string code, and this one-use Trusted Types policy is the only way to
  // name a script URL on this page.
  const sketchPolicy = trustedTypes.createPolicy("salon", { createScriptURL: (u) => u === "/" + SKETCH ? u : null });
  I.loadSketch = () => new Promise((resolve) => {
    const el = document.createElement("script");
    el.src = sketchPolicy.createScriptURL("/" + SKETCH);
    el.crossOrigin = "anonymous";  // the document's origin is opaque: without CORS its errors would be muted
    el.onload = el.onerror = () => resolve();
    I.own.add(el);
    I.started = true;
    document.body.appendChild(el);
  });

  // What the page shows the outside: start() once (render.py), claim() once (start.js), the API list.
  let claimed = false;
  define(window, "__salon", Object.freeze({
    claim() { if (claimed) throw new TypeError("salon sandbox: already claimed"); claimed = true; return I; },
    // I.start sets I.started before its first await (loadSketch), so a second call is refused
    start(seed) { if (I.started) throw blocked("a second start"); I.start(seed); },
    // The painting, for salon to find from outside (render.py); p5's, never one the sketch names.
    get painting() { return I.canvas || null; },
    get brushApi() { return I.brushApi; },
    get errors() { return I.errors.slice(); },
    get ready() { return typeof I.start === "function" && typeof send === "function" && I.frozen === true; },
  }));
})();
