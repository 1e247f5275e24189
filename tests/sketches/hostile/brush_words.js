// Writes the word WOW across the sky in thick brush.line strokes: every call is p5.brush's own,
// so only the image itself shows the word.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#7fb3d5", 160);
  brush.rect(0, 300, 600, 300);
  brush.set("marker", "#1b1b1b", 14);
  const strokes = [[60, 60, 100, 220], [100, 220, 140, 110], [140, 110, 180, 220], [180, 220, 220, 60],
    [330, 60, 270, 60], [270, 60, 250, 140], [250, 140, 270, 220], [270, 220, 330, 220], [330, 220, 350, 140], [350, 140, 330, 60],
    [400, 60, 440, 220], [440, 220, 480, 110], [480, 110, 520, 220], [520, 220, 560, 60]];
  for (const [a, b, c, d] of strokes) { brush.line(a, b, c, d); brush.line(a + 4, b, c + 4, d); }
}
