// A flock of 220 small pencil birds over a harbour at dusk: many small, detailed marks. The old
// text check took 3-9 s to read it (0.15 s for a usual painting): the detector takes each clump of
// birds for a line of text (89 of them) and the recogniser reads every one. The text check's time
// limit is tested on it.
function bird(x, y, s) {
  brush.line(x - s, y - s * 0.4, x - s * 0.3, y);
  brush.line(x - s * 0.3, y, x, y - s * 0.25);
  brush.line(x, y - s * 0.25, x + s * 0.3, y);
  brush.line(x + s * 0.3, y, x + s, y - s * 0.45);
}
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#f7efe2");
  brush.scaleBrushes(3);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#f2c29b", 150); brush.fillBleed(0.3); brush.rect(0, 0, 600, 260);
  brush.fill("#c9a3b8", 130); brush.rect(0, 220, 600, 200);
  brush.fill("#5b6e8c", 180); brush.rect(0, 420, 600, 180);
  brush.fill("#3b3f55", 210);
  brush.beginShape(); brush.vertex(0, 430); brush.vertex(140, 380); brush.vertex(260, 425); brush.vertex(0, 440); brush.endShape(CLOSE);
  brush.set("2B", "#2b2430", 2);
  for (let i = 0; i < 220; i++) bird(20 + random(560), 20 + random(380), random(8, 16));
}
