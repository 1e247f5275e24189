function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  text('BEST PAINTING', 100, 100);
}
