// reeds in wind — painted a few strokes a frame, finished after 90 frames
let x = -280;
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#eef1e6");
  brush.scaleBrushes(1.5);
}
function draw() {
  brush.set("HB", color(60 + frameCount, 110, 70), 1.2);
  brush.line(x, 280, x + random(-30, 30), random(-250, 0));
  brush.line(x + 3, 280, x + random(-30, 30), random(-200, 50));
  x += 6.5;
  if (frameCount >= 90) noLoop();
}
