// jellyfish — three of them at different depths, hatched water
function bell(x, y, r, col) {
  brush.noStroke();
  brush.fill(col, 190);
  brush.fillBleed(0.3);
  brush.beginShape();
  for (let a = 180; a <= 360; a += 12) brush.vertex(x + cos(a) * r, y + sin(a) * r * 0.8);
  brush.vertex(x + r, y + r * 0.15);
  brush.vertex(x - r, y + r * 0.15);
  brush.endShape(CLOSE);
  brush.set("HB", col, 1.1);
  for (let k = -3; k <= 3; k++) {
    const pts = [];
    for (let t = 0; t <= 6; t++) pts.push([x + k * r * 0.25 + sin(t * 50 + k * 30) * r * 0.15, y + r * 0.2 + t * r * 0.45, 1]);
    brush.spline(pts, 0.6);
  }
}
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#eaf0ee");
  brush.scaleBrushes(3);
  angleMode(DEGREES);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#244d6b", 160);
  brush.fillBleed(0.4);
  brush.rect(0, 0, 600, 600);
  brush.hatchStyle("HB", "#9cc6d9", 1);
  brush.hatch(18, 30, { rand: 0.2 });
  brush.noFill();
  bell(200, 170, 70, "#f0a6ca");
  bell(420, 300, 95, "#f7c6a3");
  bell(260, 420, 55, "#c3b1e1");
}
