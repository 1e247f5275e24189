// Everything a sketch can reach, walked from its compartment's global object in a page where a
// sketch is still in setup (tests/test_render_world.py). Run in salon's main world with
// page.evaluate(WALK, extraRoots): it returns the problems found and what it walked; extraRoots
// (paths from the window, such as ["p5", "instance"]) are walked too, for the test's control.
//
// Roots: the compartment's globals; the results of calling every world function with sample
// arguments (brush.* and its classes' methods, p5's helpers); the arguments p5.brush hands to the
// sketch's own functions (a field, a tip). Reached from a root: own properties (values, getters,
// setters, and what the world's getters return), prototypes. A reached object must not be a node,
// a window, p5 or anything of p5's, a canvas, a context, a shader, a texture or a bitmap; a reached
// function must be JavaScript's own (reachable from its builtins) or one the world made.
async (extraRoots) => {
  const salon = window.__salon;
  const g = salon.compartmentGlobal;
  const JS = __JS_BUILTINS__;
  const problems = [], seen = new Map();  // object -> the path it was first reached by
  const builtins = new Set();
  const isObject = (x) => (typeof x === "object" && x !== null) || typeof x === "function";
  const children = (x, path, out, callGetters) => {
    for (const k of Reflect.ownKeys(x)) {
      const d = Reflect.getOwnPropertyDescriptor(x, k);
      const at = path + "." + String(k);
      if ("value" in d) out.push([d.value, at]);
      if (d.get) {
        out.push([d.get, at + "<get>"]);
        if (callGetters && salon.isWorld(d.get)) { try { out.push([Reflect.apply(d.get, x, []), at]); } catch (e) { /* a getter of no instance */ } }
      }
      if (d.set) out.push([d.set, at + "<set>"]);
    }
    out.push([Object.getPrototypeOf(x), path + ".__proto__"]);
  };
  // JavaScript's own: everything reachable from the compartment's builtins (its Math is the world's).
  const stack = JS.filter((n) => n !== "Math").map((n) => [g[n], n]).concat([[Math, "%Math%"]]);
  while (stack.length) {
    const [x] = stack.pop();
    if (!isObject(x) || builtins.has(x)) continue;
    builtins.add(x);
    const next = [];
    children(x, "", next, false);
    for (const item of next) stack.push(item);
  }
  const P5S = ["Graphics", "Renderer", "RendererGL", "Renderer2D", "Shader", "Image", "Framebuffer", "Color", "Vector",
    "Texture", "Geometry", "Camera", "Element", "Font", "Matrix"].map((n) => p5[n]).filter(Boolean);
  const DOM = [Node, Window, EventTarget, HTMLCanvasElement, OffscreenCanvas, WebGLRenderingContext, WebGL2RenderingContext,
    CanvasRenderingContext2D, OffscreenCanvasRenderingContext2D, ImageBitmap, WebGLShader, WebGLProgram, WebGLTexture,
    WebGLFramebuffer, WebGLBuffer, ImageData];
  const forbidden = (x) => {
    if (x === window || x === document || x === p5 || x === window.brush || x === salon) return "a page global";
    if (x instanceof p5) return "a p5 instance";
    for (const C of P5S) if (x instanceof C) return "a p5." + C.name;
    for (const C of DOM) if (x instanceof C) return "a " + C.name;
    if (typeof x === "function" && !builtins.has(x) && !salon.isWorld(x)) return "a function the world does not list";
    return "";
  };
  const walk = (root, path) => {
    const queue = [[root, path]];
    while (queue.length) {
      const [x, at] = queue.shift();
      if (!isObject(x) || seen.has(x) || builtins.has(x)) continue;
      seen.set(x, at);
      const why = forbidden(x);
      if (why) { problems.push(at + ": " + why); continue; }
      children(x, at, queue, true);
    }
  };

  for (const name of Object.getOwnPropertyNames(g)) if (!JS.includes(name) || name === "Math") walk(g[name], name);
  const got = g.Object.getOwnPropertyDescriptor(g, "width");
  walk(got && got.get, "width<get>");

  // What the world hands out. Sample arguments; a call that throws hands out nothing.
  const points = [[0, 0], [120, 0], [120, 90], [0, 90]];
  const samples = [[], [0, 0, 50], [10, 20, 60, 40], [points], ["#3a6ea5", 120], ["HB", "#222222", 1], [0.3], ["curve"],
    [0, 0, 100, 30], [{ point1: { x: -10, y: 45 }, point2: { x: 200, y: 45 } }]];
  const tryCall = (f, self, path) => {
    for (const args of samples) {
      try { walk(Reflect.apply(f, self, args), path + "(" + JSON.stringify(args).slice(1, -1) + ")"); } catch (e) { /* refused */ }
    }
  };
  const handed = [];  // what p5.brush gives the sketch's own functions
  g.brush.addField("walk", (...a) => { handed.push(a); return a[1]; });
  g.brush.field("walk");
  g.brush.refreshField(1);
  g.brush.add("walk", { type: "custom", weight: 5, scatter: 0.1, sharpness: 0.5, grain: 4, opacity: 120, spacing: 0.6,
    pressure: [0.6, 1.2], rotate: "natural", tip: (...a) => { handed.push(a); a[0].rect(-5, -5, 10, 10); } });
  g.brush.set("walk", "#224466", 1);
  g.brush.line(0, 0, 40, 40);
  g.brush.noField();
  for (const [name, f] of Object.entries(g.brush)) {
    if (typeof f !== "function") continue;
    if (/^[A-Z]/.test(name)) {
      for (const args of [[points], ["curve"], [10, 10]]) {
        try {
          const made = new f(...args);
          walk(made, "new brush." + name);
          for (const m of Object.getOwnPropertyNames(Object.getPrototypeOf(made))) {
            if (m !== "constructor") tryCall(made[m], made, "new brush." + name + "()." + m);
          }
        } catch (e) { /* not with these arguments */ }
      }
    } else if (!["instance", "load", "add"].includes(name)) tryCall(f, undefined, "brush." + name);
  }
  for (const name of Object.getOwnPropertyNames(g)) {
    if (typeof g[name] === "function" && !JS.includes(name) && name !== "brush") tryCall(g[name], undefined, name);
  }
  for (const name of ["color", "lerpColor", "createVector"]) walk(g[name]("#123456", "#abcdef", 0.5), name + "()");
  walk(g.createVector(1, 2).copy(), "createVector().copy()");
  handed.forEach((a, i) => walk(a, "handed[" + i + "]"));
  // the control: roots the world does not hold, named by their path from the window
  for (const path of extraRoots) walk(path.reduce((x, k) => x[k], window), path.join("."));
  return { problems, reached: seen.size, builtins: builtins.size, handed: handed.length };
}
