// Starts a second p5 instance whose canvas is a flat red block, hoping it is taken as the painting.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const P = self["p" + "5"];
  new P((p) => { p.setup = () => { p.createCanvas(600, 600, p.WEBGL); p.background(255, 0, 0); }; });
}
