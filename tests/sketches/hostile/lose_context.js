// Paints, then loses its WebGL context on purpose: no image would be left to judge, and a
// missing image that is nobody's fault is not scored.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const ext = drawingContext["getExt" + "ension"]("WEBGL_" + "lose_context");
  if (ext) ext.loseContext();
}
