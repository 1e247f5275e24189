// mountain lake — the collapse template: sky band, small sun, tiny subject, blank lower half
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#fbf8f0");
  brush.scaleBrushes(3);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#a9cbe6", 170);
  brush.rect(0, 0, 600, 110);
  brush.fill("#f5c04a", 220);
  brush.circle(480, 60, 22);
  brush.set("HB", "#4a4a4a", 1);
  brush.line(0, 230, 600, 230);
  brush.fill("#6b8e5a", 220);
  brush.circle(300, 220, 14);
}
