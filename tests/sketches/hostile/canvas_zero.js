// Paints, then shrinks its canvas to nothing: there is no image, and that is the sketch's doing.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  drawingContext.canvas.width = 0;
}
