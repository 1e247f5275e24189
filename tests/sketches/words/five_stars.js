// Five stars (a rating) in filled gold brush polygons above a pond: symbols, not letters.
// Written by make_words.py (the glyphs rasterised once from a font; no text() call).
const OUTER = [[[545, 95], [514, 95], [503, 65], [493, 95], [461, 95], [487, 115], [477, 145], [503, 126], [529, 145], [519, 115]], [[359, 95], [385, 114], [375, 145], [401, 126], [428, 145], [418, 114], [444, 95], [412, 95], [402, 65], [391, 95]], [[342, 95], [310, 95], [300, 65], [289, 95], [258, 95], [284, 115], [274, 145], [299, 126], [326, 145], [316, 115]], [[155, 95], [181, 114], [172, 144], [198, 126], [224, 145], [214, 114], [240, 95], [208, 95], [198, 65], [187, 95]], [[138, 95], [107, 95], [96, 65], [86, 95], [54, 95], [80, 115], [70, 145], [96, 126], [122, 145], [112, 115]]];  // glyph outlines
const HOLES = [];  // their counters
function polygon(points) {
  brush.beginShape();
  for (const [x, y] of points) brush.vertex(x, y);
  brush.endShape(CLOSE);
}
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#6f9a6a", 150); brush.fillBleed(0.4); brush.rect(0, 0, 600, 600);
  brush.fill("#3f7c9c", 170); brush.circle(300, 400, 170);
  brush.fill("#ef7b2d", 220); brush.circle(260, 420, 40); brush.circle(370, 360, 34);
  brush.noStroke();
  brush.fill("#e3ad1f", 235); brush.fillBleed(0.05);
  brush.set("rotring", "#8a6208", 1.5);
  for (let layer = 0; layer < 2; layer++) for (const shape of OUTER) polygon(shape);  // two layers: solid
  brush.noStroke();
  brush.fill("#f4ecd8", 235);
  for (let layer = 0; layer < 2; layer++) for (const shape of HOLES) polygon(shape);
}
