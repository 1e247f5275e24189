// still life with pears — soft shadows, two pears, a cloth fold
function pear(x, y, s, col) {
  brush.fill(col, 210);
  brush.fillBleed(0.25);
  brush.circle(x, y, 60 * s);
  brush.circle(x + 4 * s, y - 55 * s, 38 * s);
  brush.set("HB", "#5b3a1e", 1.5);
  brush.line(x + 4 * s, y - 90 * s, x + 12 * s, y - 115 * s);
  brush.noStroke();
}
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#f5efe2");
  brush.scaleBrushes(3);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#c9b79c", 150);
  brush.fillBleed(0.35);
  brush.rect(0, 380, 600, 220);
  brush.fill("#8c7b6a", 140);
  brush.circle(250, 430, 70);
  brush.circle(400, 440, 60);
  pear(240, 370, 1.1, "#b7c44a");
  pear(395, 385, 0.95, "#d8a23a");
  brush.set("2B", "#6e5a48", 1);
  brush.flowLine(30, 520, 400, 5);
}
