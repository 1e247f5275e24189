// An old brick wall with ivy: courses of bricks (a grid of short strokes) and leaves.
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#efe4d6");
  brush.scaleBrushes(3);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#b4634a", 170); brush.fillBleed(0.2); brush.rect(0, 0, 600, 600);
  brush.set("HB", "#e9dccb", 1.4);
  for (let y = 0; y <= 600; y += 30) {
    brush.line(0, y, 600, y);
    for (let x = (y / 30) % 2 ? 0 : 35; x < 600; x += 70) brush.line(x, y, x, y + 30);
  }
  brush.noStroke();
  for (let i = 0; i < 70; i++) {
    brush.fill(i % 3 ? "#4f7f3a" : "#6d9c45", 215);
    const x = 380 + random(-120, 200) * random(), y = random(600);
    brush.circle(x, y, random(8, 16));
  }
  brush.set("cpencil", "#3e5b2b", 1.2);
  brush.line(520, 0, 470, 600);
}
