// peach hibiscus — layered petals with shaped vertices, stamen, leaves
function petal(cx, cy, angle, len, wid, col) {
  const pts = [];
  for (let t = 0; t <= 1.0001; t += 0.125) {
    const w = sin(t * 180) * wid;
    pts.push([t * len, -w]);
  }
  for (let t = 1; t >= -0.0001; t -= 0.125) {
    const w = sin(t * 180) * wid * 0.9;
    pts.push([t * len, w]);
  }
  brush.fill(col, 200);
  brush.fillBleed(0.3);
  brush.beginShape();
  for (const [px, py] of pts) {
    brush.vertex(cx + px * cos(angle) - py * sin(angle), cy + px * sin(angle) + py * cos(angle));
  }
  brush.endShape(CLOSE);
}
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#fcf7ec");
  brush.scaleBrushes(3);
  angleMode(DEGREES);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  petal(300, 330, 130, 220, 60, "#5f8f4e");
  petal(300, 330, 40, 200, 55, "#6e9c5a");
  const tones = ["#f9b38a", "#f59e74", "#fbc7a2", "#f28c6a", "#f7a983"];
  for (let i = 0; i < 5; i++) petal(300, 300, i * 72 - 80, 170, 75, tones[i]);
  brush.fill("#b22b3a", 220);
  brush.fillBleed(0.2);
  brush.circle(300, 300, 42);
  brush.set("marker", "#e8b030", 1.4);
  brush.line(300, 300, 360, 200);
  brush.noStroke();
  brush.fill("#f2c94c", 230);
  brush.circle(362, 196, 12);
}
