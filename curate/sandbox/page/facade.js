// salon page facade: the sketch's whole world. Built after p5 and p5.brush load and before ses's
// lockdown; start.js hardens it and evaluates the sketch in a Compartment whose globals are these
// and JavaScript's own frozen builtins, nothing else.
//
// The world (its names are salon.curate.sandbox.world's lists, injected here):
//   brush        a facade of p5.brush's API: every argument copied to plain data before p5.brush
//                sees it, every result plain data or a facade (brush.Polygon, Plot and Position
//                instances); a function the sketch hands over (a field, a pressure curve, a tip)
//                is called with plain data only, and a custom tip draws on a surface facade that
//                lives as long as the tip function runs
//   the paper    createCanvas, background, clear, pixelDensity, resizeCanvas (size and density forced)
//   state        push, pop, translate, rotate, angleMode, noLoop, ... (nothing that paints)
//   helpers      random, noise, map, lerp, sin, ..., color and its readers (colours are CSS strings),
//                createVector (a vector of this file's own), the constants, width, height, frameCount
//   console      log, info, warn, error, debug: the page's console, given strings only
// Nothing of the page's (window, document, p5, its instance, a renderer, canvas, context, image,
// shader, timer or frame hook) is reachable from any of it: tests/test_render_world.py walks it.
(() => {
  "use strict";
  const I = window.__salon.claim("facade");
  const { apply, construct, getPrototypeOf } = Reflect;
  const { defineProperty, keys, create } = Object;
  const isArray = Array.isArray, isView = ArrayBuffer.isView, ObjectProto = Object.prototype;
  const P5 = window.p5, realBrush = window.brush;
  const WORLD = __SALON_WORLD__;  // world.py: {category: [names]}
  const NAME_CODES = __SALON_NAME_CODES__;  // world.py: names outside the world -> their violation code
  I.codeOfName = (name) => (Object.hasOwn(NAME_CODES, name) ? NAME_CODES[name] : "unknown_name");

  // Everything this file makes for the sketch: the reachability test asks of each object it
  // reaches whether it is one of these, plain data, or a JavaScript builtin.
  const made = new WeakSet();
  const mark = (x) => { made.add(x); return x; };
  I.isWorld = (x) => made.has(x);
  const fn = (name, body) => mark({ [name](...a) { return body(this, a); } }[name]);  // no prototype, named
  const refused = (what) => new TypeError("salon sandbox: " + what);
  // Every call into the page: refused once the painting is finished (a promise job of the sketch's
  // would otherwise paint between "done" and the capture).
  const live = (what) => { if (I.settled) throw refused(what + " after the painting is finished"); };

  // Crossing the boundary. Sizes one crossing may copy: more is refused, not truncated.
  const MAX_DEPTH = 16, MAX_VALUES = 1 << 20;
  const count = (budget) => { if (++budget.n > MAX_VALUES) throw new RangeError("salon sandbox: a value of more than " + MAX_VALUES + " parts crossed into p5.brush"); };
  const lengthOf = (v) => Math.min(MAX_VALUES, Math.max(0, Math.floor(Number(v.length)) || 0));
  const reals = new WeakMap();  // facade -> the p5.brush object behind it
  const facades = new WeakMap();  // p5.brush object -> its facade
  const callbacks = new WeakMap();  // sketch function -> the page function p5.brush calls instead
  const sketchFunctionOf = new WeakMap();  // that page function -> the sketch function

  // A plain object of v's own enumerable keys, each value converted. Defined, not assigned: an
  // assignment to a key such as toString would hit the frozen Object.prototype's own (the override
  // mistake) and throw, and one to __proto__ would set the copy's prototype.
  const copied = (v, convert) => {
    const out = {};
    for (const k of keys(v)) defineProperty(out, k, { value: convert(v[k]), writable: true, enumerable: true, configurable: true });
    return out;
  };
  // Into the page: numbers, strings, arrays and plain objects, copied; facades as what they stand
  // for; the sketch's functions as callbacks that give it plain data and take plain data back.
  const toPage = (v, budget = { n: 0 }, depth = 0) => {
    count(budget);
    if (typeof v === "function") return reals.get(v) || callbackOf(v);
    if (v === null || typeof v !== "object") return v;
    if (reals.has(v)) return reals.get(v);
    if (depth >= MAX_DEPTH) return undefined;
    if (isView(v)) return Array.from(v);
    if (isArray(v)) {
      const out = [];
      for (let i = 0, n = lengthOf(v); i < n; i++) out.push(toPage(v[i], budget, depth + 1));
      return out;
    }
    return copied(v, (x) => toPage(x, budget, depth + 1));
  };
  const callbackOf = (f) => {
    let cb = callbacks.get(f);
    if (!cb) {
      cb = (...a) => toPage(apply(f, undefined, a.map((x) => toSketch(x))));
      callbacks.set(f, cb);
      sketchFunctionOf.set(cb, f);
    }
    return cb;
  };
  const colourString = (c) => apply(P5.Color.prototype.toString, c, []);
  // Out to the sketch: primitives, fresh arrays and plain objects, colours as CSS strings,
  // p5.brush's own objects as facades; anything else of the page's stays in the page (undefined).
  const toSketch = (v, budget = { n: 0 }, depth = 0) => {
    count(budget);
    if (typeof v === "function") return undefined;
    if (v === null || typeof v !== "object") return v;
    const facade = facadeOf(v);
    if (facade || depth >= MAX_DEPTH) return facade;
    if (isView(v)) return Array.from(v);
    if (isArray(v)) return v.map((x) => toSketch(x, budget, depth + 1));
    if (v instanceof P5.Color) return colourString(v);
    const proto = getPrototypeOf(v);
    if (proto !== ObjectProto && proto !== null) return undefined;
    return copied(v, (x) => toSketch(x, budget, depth + 1));
  };
  // An error on its way back to the sketch: the page's own errors carry strings only; anything
  // else thrown inside p5.brush becomes a plain TypeError with its text.
  const safeError = (e) => (e instanceof Error && Reflect.ownKeys(e).every((k) => k === "message" || k === "stack")
    ? e : new TypeError(String(e && typeof e === "object" ? "an object thrown inside p5.brush" : e)));
  const guarded = (what, body) => {
    live(what);
    try { return body(); } catch (e) { throw safeError(e); }
  };

  // p5.brush's classes: constructible facades whose instances show the real object's public fields
  // (copied on every read) and methods (through the same crossing).
  const classes = [];  // [real class, facade prototype]
  const fieldReaders = new Map();
  const fieldReader = (k) => {
    if (!fieldReaders.has(k)) {
      const reader = { get [k]() { const real = reals.get(this); return real ? toSketch(real[k]) : undefined; } };
      fieldReaders.set(k, mark(Object.getOwnPropertyDescriptor(reader, k).get));
    }
    return fieldReaders.get(k);
  };
  const facadeOf = (real) => {
    const known = facades.get(real);
    if (known) return known;
    const entry = classes.find(([Real]) => real instanceof Real);
    if (!entry) return undefined;
    const f = create(entry[1]);
    for (const k of keys(real)) if (k[0] !== "_") defineProperty(f, k, { get: fieldReader(k), enumerable: true });
    reals.set(f, real);
    facades.set(real, f);
    return mark(I.harden(f));
  };
  const classFacade = (name, Real) => {
    const proto = mark({});
    for (const m of Object.getOwnPropertyNames(Real.prototype)) {
      if (m === "constructor" || m[0] === "_" || typeof Real.prototype[m] !== "function") continue;
      proto[m] = fn(m, (self, a) => guarded("brush." + name + "." + m, () => {
        const real = reals.get(self);
        if (!real) throw refused("brush." + name + "." + m + " called on something that is not a brush." + name);
        return toSketch(apply(Real.prototype[m], real, a.map((x) => toPage(x))));
      }));
    }
    const Ctor = mark({ [name]: function (...a) {
      if (new.target === undefined) throw refused("brush." + name + " is a class: use new brush." + name + "(...)");
      return guarded("new brush." + name, () => facadeOf(construct(Real, a.map((x) => toPage(x)))));
    } }[name]);
    defineProperty(proto, "constructor", { value: Ctor });
    Ctor.prototype = proto;
    classes.push([Real, proto]);
    return Ctor;
  };

  // A custom tip is drawn once, when brush.add runs, on a 2D surface of p5.brush's: the tip
  // function gets a facade of that surface's shape calls, dead once the function returns.
  const TIP_CALLS = WORLD.tip;
  const drawTip = (sketchTip) => (surface) => {
    let open = true;
    const plain = (x) => (typeof x === "number" || typeof x === "string" || typeof x === "boolean" ? x : undefined);
    const facade = {};
    for (const name of TIP_CALLS) {
      facade[name] = fn(name, (self, a) => {
        if (!open) throw refused("a tip surface is drawn on only while its tip function runs");
        apply(surface[name], surface, a.map(plain));
      });
    }
    apply(sketchTip, undefined, [mark(I.harden(facade))]);
    open = false;
  };
  const brushCall = {
    add: (real, a) => {
      const params = toPage(a[1]) || {};
      if (params.type === "image") { I.flag("external_access", "brush.add of an image tip (a file to load)"); throw refused("image tips load files"); }
      if (params.type === "custom" && typeof params.tip === "function") params.tip = drawTip(sketchFunctionOf.get(params.tip));
      return apply(real, undefined, [toPage(a[0]), params]);
    },
    instance: () => { throw refused("brush.instance: the sketch's p5 is the page's own, in global mode"); },
    load: (real, a) => { if (a.length) throw refused("brush.load of a buffer: the sketch paints on its canvas"); return apply(real, undefined, []); },
  };
  const brush = {};
  for (const name of keys(realBrush)) {
    const real = realBrush[name];
    if (WORLD.brushClasses.includes(name)) brush[name] = classFacade(name, real);
    else if (typeof real === "function") {
      const call = brushCall[name] || ((r, a) => apply(r, undefined, a.map((x) => toPage(x))));
      brush[name] = fn(name, (self, a) => guarded("brush." + name, () => toSketch(call(real, a))));
    }
  }
  I.brushApi = keys(brush).sort();
  mark(brush);

  // p5: called on the sketch's instance (the page's first p5, start.js), which exists from setup on.
  const p5Call = (name, args) => guarded(name + "()", () => {
    const p = I.instance;
    if (!p) throw refused(name + "() is available from setup() on, as in p5's global mode");
    return apply(p[name], p, args);
  });
  const plainArgs = (a) => a.map((x) => toPage(x));
  const world = { brush };
  for (const name of [...WORLD.state, ...WORLD.helpers, "color"]) {
    world[name] = fn(name, (self, a) => toSketch(p5Call(name, plainArgs(a))));
  }
  // The colour readers and lerpColor take colours, which the sketch holds as CSS strings.
  const asColours = (a, n) => a.map((x, i) => (i < n && typeof x === "string" ? p5Call("color", [x]) : toPage(x)));
  for (const name of WORLD.colours.filter((c) => c !== "color")) {
    world[name] = fn(name, (self, a) => toSketch(p5Call(name, asColours(a, name === "lerpColor" ? 2 : 1))));
  }
  // The paper: the canvas is always size x size at density 1, whatever the sketch asks for. The
  // canvas createCanvas makes for the page's instance is the painting (guard.js notes it).
  const paper = {
    createCanvas: (a) => {
      const renderer = typeof a[2] === "string" ? [a[2]] : [];
      I.makingPainting = true;
      try { p5Call("createCanvas", [I.size, I.size, ...renderer]); } finally { I.makingPainting = false; }
      I.canvas = I.madeCanvas;
    },
    background: (a) => { p5Call("background", plainArgs(a)); },
    clear: (a) => { p5Call("clear", plainArgs(a)); },
    pixelDensity: (a) => (a.length ? void p5Call("pixelDensity", [1]) : 1),
    resizeCanvas: () => { p5Call("resizeCanvas", [I.size, I.size]); },
  };
  for (const name of WORLD.paper) world[name] = fn(name, (self, a) => paper[name](a));
  // The frame loop is start.js's: noLoop ends the painting after the frame that called it.
  world.noLoop = fn("noLoop", () => { I.stopped = true; });
  world.loop = fn("loop", () => { I.stopped = false; });
  world.isLooping = fn("isLooping", () => !I.stopped);
  for (const name of WORLD.constants) world[name] = P5.prototype[name];
  // Math as JavaScript has it, but for random: seeded (guard.js), where a compartment's own throws.
  const math = {};
  for (const k of Object.getOwnPropertyNames(Math)) math[k] = Math[k];
  math.random = fn("random", () => Math.random());
  world.Math = mark(math);
  world.console = mark({});
  for (const name of ["log", "info", "warn", "error", "debug"]) {
    world.console[name] = fn(name, (self, a) => { console.log("sketch:", ...a.map((x) => typeof x === "object" && x !== null ? "[object]" : String(x))); });
  }

  // createVector: a vector of this file's own (p5's holds functions bound to the instance), in
  // the angle mode of the sketch's instance.
  const angle = (a) => (I.instance && I.instance.angleMode() === P5.prototype.DEGREES ? (a * Math.PI) / 180 : a);
  const unangle = (r) => (I.instance && I.instance.angleMode() === P5.prototype.DEGREES ? (r * 180) / Math.PI : r);
  const num = (x, d = 0) => (typeof x === "number" ? x : x === undefined ? d : Number(x));
  class Vector {
    constructor(x, y, z) { this.x = num(x); this.y = num(y); this.z = num(z); }
    set(x, y, z) { if (x instanceof Vector) return this.set(x.x, x.y, x.z); this.x = num(x); this.y = num(y); this.z = num(z); return this; }
    copy() { return new Vector(this.x, this.y, this.z); }
    add(x, y, z) { if (x instanceof Vector) return this.add(x.x, x.y, x.z); this.x += num(x); this.y += num(y); this.z += num(z); return this; }
    sub(x, y, z) { if (x instanceof Vector) return this.sub(x.x, x.y, x.z); this.x -= num(x); this.y -= num(y); this.z -= num(z); return this; }
    mult(s) { s = num(s, 1); this.x *= s; this.y *= s; this.z *= s; return this; }
    div(s) { s = num(s, 1); this.x /= s; this.y /= s; this.z /= s; return this; }
    magSq() { return this.x * this.x + this.y * this.y + this.z * this.z; }
    mag() { return Math.sqrt(this.magSq()); }
    dot(v) { return this.x * v.x + this.y * v.y + this.z * v.z; }
    cross(v) { return new Vector(this.y * v.z - this.z * v.y, this.z * v.x - this.x * v.z, this.x * v.y - this.y * v.x); }
    dist(v) { return Math.hypot(this.x - v.x, this.y - v.y, this.z - v.z); }
    normalize() { const m = this.mag(); return m ? this.div(m) : this; }
    setMag(n) { return this.normalize().mult(n); }
    limit(n) { return this.magSq() > n * n ? this.setMag(n) : this; }
    heading() { return unangle(Math.atan2(this.y, this.x)); }
    setHeading(a) { const m = this.mag(); this.x = m * Math.cos(angle(a)); this.y = m * Math.sin(angle(a)); return this; }
    rotate(a) { return this.setHeading(this.heading() + a); }
    angleBetween(v) { return unangle(Math.atan2(this.x * v.y - this.y * v.x, this.dot(v))); }
    lerp(v, t) { this.x += (v.x - this.x) * t; this.y += (v.y - this.y) * t; this.z += (v.z - this.z) * t; return this; }
    array() { return [this.x, this.y, this.z]; }
    equals(v) { return this.x === v.x && this.y === v.y && this.z === v.z; }
    toString() { return "Vector(" + this.x + ", " + this.y + ", " + this.z + ")"; }
    static fromAngle(a, length = 1) { return new Vector(length * Math.cos(angle(a)), length * Math.sin(angle(a)), 0); }
    static random2D() { return Vector.fromAngle(unangle(Math.random() * 2 * Math.PI)); }
    static add(a, b) { return a.copy().add(b); }
    static sub(a, b) { return a.copy().sub(b); }
    static mult(a, s) { return a.copy().mult(s); }
    static dist(a, b) { return a.dist(b); }
    static lerp(a, b, t) { return a.copy().lerp(b, t); }
  }
  for (const part of [Vector, Vector.prototype]) for (const k of Object.getOwnPropertyNames(part)) if (typeof part[k] === "function") mark(part[k]);
  mark(Vector.prototype);
  world.createVector = fn("createVector", (self, a) => new Vector(...a.map((x) => num(x))));

  // The live values: read from the instance on every use (start.js defines them on the
  // compartment's global object, since endowments are copied once).
  I.liveValues = {
    width: mark(() => (I.instance ? I.instance.width : 0)),
    height: mark(() => (I.instance ? I.instance.height : 0)),
    frameCount: mark(() => (I.instance ? I.instance.frameCount : 0)),
  };
  I.world = world;
  I.hardenToo = [Vector];  // reached only through a vector's prototype
})();
