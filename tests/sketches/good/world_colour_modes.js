// sea glass — colours in HSB mode cross as strings and read back
function setup() {
  createCanvas(600, 600, WEBGL);
  background(255);
  colorMode(HSB, 360, 100, 100, 100);
  const c = color(200, 60, 80, 80);
  console.log(c);
  brush.noStroke();
  brush.fill(c, 200);
  brush.circle(0, 0, 150);
  brush.fill(lerpColor(c, color(20, 80, 90), 0.5), 200);
  brush.circle(100, 100, 80);
  if (hue(c) < 150) throw new Error("hue read " + hue(c) + " from " + c);
}
