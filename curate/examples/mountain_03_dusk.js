// mountain lake at dusk — graded sky, layered ranges, hatched water, pines
function pine(x, y, h) {
  brush.fill("#1f3328", 220);
  brush.fillBleed(0.1);
  brush.beginShape();
  brush.vertex(x, y - h); brush.vertex(x + h * 0.28, y); brush.vertex(x - h * 0.28, y);
  brush.endShape(CLOSE);
}
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#f6efe3");
  brush.scaleBrushes(3);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  const sky = ["#f2b880", "#e79a8a", "#a28bb5"];
  for (let i = 0; i < 3; i++) { brush.fill(sky[i], 150); brush.fillBleed(0.4); brush.rect(0, i * 90, 600, 120); }
  const ranges = [["#7d6f98", 210, 0.9], ["#5a5078", 260, 1.2], ["#3b3656", 310, 1.6]];
  for (const [col, base, amp] of ranges) {
    brush.fill(col, 200);
    brush.fillBleed(0.2);
    brush.beginShape();
    brush.vertex(0, 600);
    for (let x = 0; x <= 600; x += 50) brush.vertex(x, base - abs(sin(x * 0.9 + base)) * 60 * amp);
    brush.vertex(600, 600);
    brush.endShape(CLOSE);
  }
  brush.fill("#8a7fae", 170);
  brush.fillBleed(0.3);
  brush.rect(0, 380, 600, 220);
  brush.hatchStyle("HB", "#d8cbe6", 1);
  brush.hatch(12, 0, { rand: 0.1 });
  brush.fill("#b9a3c9", 120);
  brush.rect(0, 400, 600, 60);
  brush.noHatch();
  for (let i = 0; i < 9; i++) pine(40 + i * 68, 390 + (i % 3) * 8, 60 + (i % 4) * 18);
}
