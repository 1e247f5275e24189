// koi pond — weak: two orange ovals on green
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#f6f2e4");
  brush.scaleBrushes(3);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#6f9a6a", 150);
  brush.rect(40, 40, 520, 520);
  brush.fill("#ef7b2d", 220);
  brush.circle(240, 260, 50);
  brush.circle(380, 360, 45);
}
