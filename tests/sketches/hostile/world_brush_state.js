// p5.brush's own state: a field function keeps the field array p5.brush hands it, and the sketch
// writes into it afterwards, so later strokes follow a field p5.brush never computed (hard
// straight bars across the canvas instead of its curves).
let kept = null;
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  brush.addField("kept", (t, field) => {
    for (const column of field) for (let r = 0; r < column.length; r++) column[r] = 90;
    kept = field;
    return field;
  });
  brush.field("kept");
  for (const column of kept) for (let r = 0; r < column.length; r++) column[r] = 0;
  brush.set("marker", "#111111", 8);
  for (let y = 40; y < 600; y += 60) brush.flowLine(0, y, 600, 0);
}
