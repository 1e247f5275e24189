// Tower blocks at dusk, each with a grid of lit windows: small repeated rectangles in rows.
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#efe6da");
  brush.scaleBrushes(3);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3d4a78", 170); brush.fillBleed(0.3); brush.rect(0, 0, 600, 600);
  brush.fill("#e48a6b", 120); brush.rect(0, 300, 600, 120);
  const towers = [[30, 180, 110], [160, 120, 90], [270, 220, 120], [410, 90, 80], [505, 200, 80]];
  for (const [x, top, w] of towers) {
    brush.fill("#262a40", 225); brush.fillBleed(0.05); brush.rect(x, top, w, 600 - top);
    brush.fill("#fbe39a", 250);
    for (let y = top + 16; y < 560; y += 30) for (let wx = x + 10; wx < x + w - 14; wx += 22) {
      if (random() < 0.6) brush.rect(wx, y, 10, 14);
    }
  }
}
