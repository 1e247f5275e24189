// A sketch that finishes clean (so its page is reused) and leaves what its world lets it change
// for the next document: a brush of its own, a field of its own, the brushes' scale, and a
// property on the global object (refused: it is frozen).
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  brush.add("left", { type: "default", weight: 3, scatter: 0.1, sharpness: 0.5, grain: 1, opacity: 150, spacing: 1, pressure: [1, 1] });
  brush.addField("left", (t, field) => field);
  brush.scaleBrushes(9);
  try { globalThis.leftBehind = 1; } catch (e) {}
}
