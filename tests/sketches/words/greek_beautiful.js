// ΩΡΑΙΟ ("beautiful") in filled brush polygons above a meadow: Greek letters the judge reads.
// Written by make_words.py (the glyphs rasterised once from a font; no text() call).
const OUTER = [[[386, 82], [386, 176], [409, 176], [409, 82]], [[309, 82], [274, 176], [298, 176], [304, 159], [342, 159], [349, 176], [372, 176], [338, 82]], [[250, 85], [238, 82], [189, 82], [189, 176], [213, 176], [214, 143], [247, 141], [255, 137], [263, 129], [267, 115], [266, 104], [260, 92]], [[456, 84], [440, 95], [431, 112], [429, 137], [435, 157], [448, 171], [466, 178], [489, 178], [507, 171], [520, 157], [525, 143], [526, 122], [520, 102], [507, 88], [493, 82], [466, 81]], [[84, 95], [74, 114], [73, 133], [77, 146], [89, 158], [70, 159], [70, 176], [113, 176], [113, 158], [106, 152], [99, 140], [97, 124], [99, 114], [104, 105], [118, 97], [129, 98], [136, 102], [145, 118], [143, 142], [136, 153], [130, 158], [130, 176], [173, 176], [173, 159], [154, 158], [164, 149], [170, 132], [167, 108], [156, 92], [137, 82], [110, 81], [92, 88]]];  // glyph outlines
const HOLES = [[[323, 104], [336, 142], [310, 141]], [[213, 100], [233, 99], [237, 101], [242, 108], [240, 121], [233, 126], [214, 126]], [[474, 97], [485, 98], [495, 105], [499, 112], [502, 126], [501, 141], [497, 151], [492, 157], [481, 162], [470, 161], [463, 157], [458, 151], [454, 140], [453, 129], [456, 112], [463, 102]]];  // their counters
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
  brush.fill("#bcd7ea", 140); brush.fillBleed(0.3); brush.rect(0, 0, 600, 330);
  brush.fill("#7fa65a", 170); brush.fillBleed(0.3); brush.rect(0, 330, 600, 270);
  brush.fill("#e0a93b", 200); brush.circle(470, 440, 40); brush.circle(160, 500, 32);
  brush.noStroke();
  brush.fill("#3b2a5a", 235); brush.fillBleed(0.05);
  for (let layer = 0; layer < 2; layer++) for (const shape of OUTER) polygon(shape);  // two layers: solid
  brush.noStroke();
  brush.fill("#f4ecd8", 235);
  for (let layer = 0; layer < 2; layer++) for (const shape of HOLES) polygon(shape);
}
