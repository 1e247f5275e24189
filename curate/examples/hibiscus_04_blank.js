// peach hibiscus — a failure: the model set up the canvas and forgot to paint
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#fbf6ea");
  brush.scaleBrushes(3);
  brush.noStroke();
  brush.fill("#f4a582", 0);
  brush.circle(0, 0, 1);
}
