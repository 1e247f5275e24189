// jellyfish — a translucent bell, wavy tentacles, deep water wash
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#f3efe6");
  brush.scaleBrushes(3);
  angleMode(DEGREES);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#1d4e6e", 170);
  brush.fillBleed(0.35);
  brush.rect(20, 20, 560, 560);
  brush.fill("#3f7fa0", 150);
  brush.fillBleed(0.3);
  brush.circle(180, 420, 170);
  brush.fill("#e7b7d8", 200);
  brush.fillBleed(0.25);
  brush.beginShape();
  for (let a = 180; a <= 360; a += 15) brush.vertex(300 + cos(a) * 130, 230 + sin(a) * 110);
  brush.vertex(420, 250);
  brush.vertex(180, 250);
  brush.endShape(CLOSE);
  brush.set("marker", "#f4d3ea", 1.2);
  for (let k = 0; k < 7; k++) {
    const pts = [];
    const x0 = 195 + k * 35;
    for (let y = 250; y <= 560; y += 20) pts.push([x0 + sin(y * 1.5 + k * 40) * 18, y, 1]);
    brush.spline(pts, 0.5);
  }
}
