// sunset over a lake — written as p5's global mode allows: undeclared globals
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbeee0");
  palette = ["#f28c6a", "#f5b971", "#a35d6a", "#3f5a7a"];
  brush.noStroke();
  for (i = 0; i < 4; i++) {
    brush.fill(palette[i], 120);
    brush.fillBleed(0.25);
    brush.rect(-300, -300 + i * 150, 600, 160);
  }
  sun = createVector(80, -60);
  brush.fill("#fff1c1", 200);
  brush.circle(sun.x, sun.y, 60);
}
