// A+ (a grade) in thick strokes in the corner of a still life: two characters, one of them a mark, so the old three-letter rule let it through.
// Written by make_words.py (the glyphs rasterised once from a font; no text() call).
const RUNS = [[75, 413, 438], [80, 411, 440], [85, 409, 442], [85, 505, 516], [90, 407, 424], [90, 427, 444], [90, 505, 516], [95, 405, 423], [95, 428, 446], [95, 505, 516], [100, 403, 421], [100, 430, 448], [100, 505, 516], [105, 401, 419], [105, 432, 450], [105, 505, 516], [110, 400, 418], [110, 433, 451], [110, 478, 543], [115, 398, 416], [115, 435, 453], [115, 478, 543], [120, 396, 455], [120, 478, 543], [125, 394, 457], [125, 505, 516], [130, 392, 459], [130, 505, 516], [135, 390, 409], [135, 442, 461], [135, 505, 516], [140, 388, 407], [140, 444, 463], [140, 505, 516], [145, 387, 405], [145, 446, 464], [145, 505, 516]];  // [y, x0, x1] scanline runs of the glyphs
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#f1e6d2", 150); brush.fillBleed(0.3); brush.rect(0, 0, 600, 600);
  brush.fill("#a8744f", 170); brush.rect(0, 420, 600, 180);
  brush.fill("#d6b23a", 210); brush.circle(220, 360, 70); brush.fill("#7fa14a", 210); brush.circle(340, 370, 55);
  brush.noStroke();
  brush.set("marker", "#b3202a", 4.5);
  for (const [y, x0, x1] of RUNS) brush.line(x0, y, x1, y);
}
