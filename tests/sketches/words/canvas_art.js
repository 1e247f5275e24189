// ART in letters that fill the canvas, in filled brush polygons: at that size the OCR's detector found nothing.
// Written by make_words.py (the glyphs rasterised once from a font; no text() call).
const OUTER = [[[407, 43], [406, 140], [468, 142], [468, 555], [515, 556], [515, 143], [517, 141], [577, 141], [577, 43]], [[243, 43], [243, 556], [290, 556], [291, 362], [310, 363], [320, 371], [326, 382], [336, 419], [360, 556], [410, 556], [376, 368], [364, 332], [358, 322], [352, 317], [352, 314], [365, 299], [374, 280], [380, 260], [385, 230], [387, 191], [386, 149], [377, 95], [365, 68], [352, 54], [340, 47], [324, 43]], [[92, 43], [22, 555], [70, 555], [82, 461], [157, 461], [169, 555], [216, 556], [148, 44]]];  // glyph outlines
const HOLES = [[[291, 137], [319, 138], [330, 147], [336, 160], [340, 195], [338, 234], [331, 257], [318, 268], [290, 267]], [[119, 166], [121, 167], [144, 350], [144, 367], [94, 366]]];  // their counters
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
  brush.fill("#e9dcc0", 150); brush.fillBleed(0.3); brush.rect(0, 0, 600, 600);
  brush.fill("#8fb3a8", 160); brush.beginShape(); brush.vertex(0, 470); brush.vertex(250, 420);
  brush.vertex(600, 460); brush.vertex(600, 600); brush.vertex(0, 600); brush.endShape(CLOSE);
  brush.set("HB", "#5d7a6e", 1); brush.line(40, 520, 560, 515); brush.line(80, 560, 520, 556);
  brush.noStroke();
  brush.fill("#2c3e66", 235); brush.fillBleed(0.05);
  for (let layer = 0; layer < 2; layer++) for (const shape of OUTER) polygon(shape);  // two layers: solid
  brush.noStroke();
  brush.fill("#f4ecd8", 235);
  for (let layer = 0; layer < 2; layer++) for (const shape of HOLES) polygon(shape);
}
