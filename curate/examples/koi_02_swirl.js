// koi pond — two koi circling among lily pads
function koi(x, y, angle, col) {
  brush.fill(col, 220);
  brush.fillBleed(0.2);
  brush.beginShape();
  const L = 110, W = 30;
  for (let t = 0; t <= 1.0001; t += 0.1) brush.vertex(x + cos(angle) * t * L - sin(angle) * sin(t * 180) * W, y + sin(angle) * t * L + cos(angle) * sin(t * 180) * W);
  for (let t = 1; t >= -0.0001; t -= 0.1) brush.vertex(x + cos(angle) * t * L + sin(angle) * sin(t * 180) * W * 0.8, y + sin(angle) * t * L - cos(angle) * sin(t * 180) * W * 0.8);
  brush.endShape(CLOSE);
  brush.fill("#fdf5e6", 200);
  brush.circle(x + cos(angle) * 70, y + sin(angle) * 70, 12);
}
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#f4efe1");
  brush.scaleBrushes(3);
  angleMode(DEGREES);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#2f6f6a", 150);
  brush.fillBleed(0.4);
  brush.rect(10, 10, 580, 580);
  const pads = [[120, 140, 60], [470, 120, 50], [500, 460, 70], [110, 480, 45]];
  for (const [px, py, r] of pads) { brush.fill("#4f8a3c", 200); brush.circle(px, py, r); }
  koi(230, 250, 30, "#f07a24");
  koi(380, 380, 210, "#f3f0e8");
  brush.fill("#d9472b", 220);
  brush.circle(400, 360, 14);
  brush.set("charcoal", "#1e3e3b", 1);
  brush.flowLine(60, 320, 200, 0);
}
