// peach hibiscus — five overlapping washes and a red throat
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#fbf6ea");
  brush.scaleBrushes(3);
  angleMode(DEGREES);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  for (let i = 0; i < 5; i++) {
    const a = i * 72 - 90;
    const x = 300 + cos(a) * 95, y = 290 + sin(a) * 95;
    brush.fill(i % 2 ? "#f6a07a" : "#f7b48f", 190);
    brush.fillBleed(0.25);
    brush.circle(x, y, 120);
  }
  brush.fill("#c0392b", 210);
  brush.fillBleed(0.15);
  brush.circle(300, 290, 45);
  brush.set("HB", "#6b2d1e", 1.5);
  brush.line(300, 290, 330, 200);
}
