// jellyfish — weak: a bell and three lines
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#0f2a44");
  brush.scaleBrushes(3);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#c7a4e8", 170);
  brush.circle(300, 220, 110);
  brush.set("marker", "#d9c2f0", 1.5);
  brush.line(260, 250, 250, 480);
  brush.line(300, 260, 300, 500);
  brush.line(340, 250, 350, 470);
}
