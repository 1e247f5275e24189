// A cottage garden behind a white picket fence: a row of upright pickets, like a row of letters.
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#f6f1e4");
  brush.scaleBrushes(3);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#a9cbe3", 150); brush.fillBleed(0.3); brush.rect(0, 0, 600, 300);
  brush.fill("#6f9b4f", 180); brush.rect(0, 300, 600, 300);
  const petals = ["#e2637b", "#f0b64a", "#b585c9", "#f08a5d"];
  for (let i = 0; i < 26; i++) { brush.fill(petals[i % 4], 210); brush.circle(20 + random(560), 250 + random(120), random(10, 22)); }
  brush.fill("#fbfaf5", 235); brush.fillBleed(0.05);
  for (let x = 20; x < 600; x += 42) {
    brush.beginShape(); brush.vertex(x, 470); brush.vertex(x, 350); brush.vertex(x + 12, 332); brush.vertex(x + 24, 350);
    brush.vertex(x + 24, 470); brush.endShape(CLOSE);
  }
  brush.rect(0, 380, 600, 14); brush.rect(0, 440, 600, 14);
  brush.set("HB", "#7b7466", 1);
  for (let x = 20; x < 600; x += 42) brush.line(x + 24, 352, x + 24, 470);
}
