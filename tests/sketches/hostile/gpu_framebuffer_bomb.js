// Asks p5 for ever more large framebuffers, swallowing every error on the way.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const hoard = [];
  for (let i = 0; i < 400; i++) {
    try { hoard.push(createFramebuffer({ width: 4000, height: 4000 })); } catch (e) { /* keep going */ }
  }
}
