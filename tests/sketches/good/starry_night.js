// A night sky over hills, full of small five-pointed stars and a crescent moon: star shapes that
// are not a rating.
function star(x, y, r) {
  brush.beginShape();
  for (let k = 0; k < 10; k++) {
    const a = -90 + k * 36, rr = k % 2 ? r * 0.45 : r;
    brush.vertex(x + cos(a) * rr, y + sin(a) * rr);
  }
  brush.endShape(CLOSE);
}
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#e9e6ef");
  brush.scaleBrushes(3);
  angleMode(DEGREES);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#1d2452", 220); brush.fillBleed(0.3); brush.rect(0, 0, 600, 600); brush.rect(0, 0, 600, 600);
  brush.fill("#f6e7a1", 230); brush.circle(460, 120, 50);
  brush.fill("#1d2452", 230); brush.circle(482, 108, 46);
  brush.fill("#f3e08c", 230); brush.fillBleed(0.05);
  brush.set("rotring", "#b8901c", 1.2);
  for (let i = 0; i < 40; i++) star(random(600), random(380), random(8, 18));
  brush.noStroke();
  brush.fill("#2f3d2c", 220);
  brush.beginShape(); brush.vertex(0, 600); brush.vertex(0, 420);
  for (let x = 0; x <= 600; x += 60) brush.vertex(x, 430 - sin(x * 0.7) * 40);
  brush.vertex(600, 600); brush.endShape(CLOSE);
}
