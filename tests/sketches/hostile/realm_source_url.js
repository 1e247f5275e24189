// Names itself p5.brush with a sourceURL comment, so that every frame of its stack reads as
// p5.brush's, then draws a bare rect.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  fill(200, 30, 30);
  self["re" + "ct"](20, 20, 200, 120);
}
//# sourceURL=http://salon.sandbox/p5.brush.js
