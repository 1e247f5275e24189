// teacup — weak: an outline with a hatch shadow
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#f8f4ec");
  brush.scaleBrushes(3);
  translate(-width / 2, -height / 2);
  brush.set("HB", "#3c3c3c", 1.4);
  brush.noFill();
  brush.rect(210, 250, 180, 150);
  brush.circle(410, 320, 35);
  brush.noStroke();
  brush.fill("#bfb4a6", 140);
  brush.hatchStyle("HB", "#8c8070", 1);
  brush.hatch(10, 45);
  brush.rect(190, 400, 240, 40);
}
