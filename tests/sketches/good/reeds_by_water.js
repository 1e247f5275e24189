// Reeds by a still lake: dozens of thin upright strokes and their reflections.
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#f4f0e6");
  brush.scaleBrushes(3);
  angleMode(DEGREES);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#d9e4dc", 150); brush.fillBleed(0.3); brush.rect(0, 0, 600, 360);
  brush.fill("#7f9fae", 170); brush.rect(0, 360, 600, 240);
  for (let i = 0; i < 60; i++) {
    const x = 10 + random(580), h = random(80, 220), lean = random(-12, 12);
    brush.set("cpencil", random() < 0.5 ? "#5e6b3a" : "#8a7a3f", random(0.8, 1.6));
    brush.line(x, 370, x + lean, 370 - h);
    brush.set("HB", "#5c7482", 0.8);
    brush.line(x, 380, x - lean * 0.5, 380 + h * 0.4);
  }
  brush.set("HB", "#eef3f2", 1.2);
  for (let y = 400; y < 600; y += 24) brush.line(40 + random(60), y, 540 - random(60), y + random(-3, 3));
}
