// A bowl of lemons on a striped tablecloth: bold parallel stripes and round fruit.
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#faf5ea");
  brush.scaleBrushes(3);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#e8dccb", 150); brush.fillBleed(0.3); brush.rect(0, 0, 600, 330);
  for (let i = 0; i < 9; i++) {
    brush.fill(i % 2 ? "#f4efe6" : "#3f6fa8", 200); brush.fillBleed(0.05);
    brush.rect(0, 330 + i * 30, 600, 30);
  }
  brush.fill("#c96f4a", 220); brush.fillBleed(0.15);
  brush.beginShape(); brush.vertex(170, 330); brush.vertex(430, 330); brush.vertex(390, 420); brush.vertex(210, 420); brush.endShape(CLOSE);
  brush.fill("#f2d03b", 225);
  brush.circle(240, 300, 48); brush.circle(320, 290, 52); brush.circle(380, 312, 40);
  brush.set("HB", "#6b5a2e", 1); brush.circle(320, 290, 52);
}
