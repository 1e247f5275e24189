// The stack limit: native frames (map over bound functions) between the sketch's own frame and
// the paint, so a guard that reads a fixed number of frames never sees the sketch's.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const bars = [];
  for (let i = 0; i < 12; i++) bars.push([i * 50, 0, 20, 600]);
  fill(20, 20, 20);
  [[bars]].map((x) => x).map((x) => x[0]).forEach((b) => b.map(Function.prototype.apply.bind(rect, null)));
}
