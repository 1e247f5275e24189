// peach hibiscus — weak: one flat blob and a stem
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#fbf6ea");
  brush.scaleBrushes(3);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#f4a582", 200);
  brush.fillBleed(0.2);
  brush.circle(300, 260, 150);
  brush.set("HB", "#3b5d3a", 2);
  brush.line(300, 400, 300, 580);
}
