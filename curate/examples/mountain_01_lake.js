// mountain lake — wet-in-wet sky, two ridges, reflection
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#f7f3ea");
  brush.scaleBrushes(3);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#9cc3e0", 160);
  brush.fillBleed(0.45);
  brush.rect(0, 0, 600, 300);
  brush.fill("#5b6f8f", 200);
  brush.fillBleed(0.2);
  brush.beginShape();
  brush.vertex(0, 330); brush.vertex(120, 170); brush.vertex(210, 250); brush.vertex(330, 120);
  brush.vertex(470, 260); brush.vertex(600, 190); brush.vertex(600, 330);
  brush.endShape(CLOSE);
  brush.fill("#3d5a48", 210);
  brush.beginShape();
  brush.vertex(0, 340); brush.vertex(150, 270); brush.vertex(300, 320); brush.vertex(450, 260);
  brush.vertex(600, 320); brush.vertex(600, 360); brush.vertex(0, 360);
  brush.endShape(CLOSE);
  brush.fill("#7fa8c6", 170);
  brush.fillBleed(0.35);
  brush.rect(0, 360, 600, 240);
  brush.set("2B", "#2f3e52", 1.2);
  for (let y = 390; y < 580; y += 35) brush.line(60 + (y % 70), y, 300 + (y % 90), y + 4);
}
