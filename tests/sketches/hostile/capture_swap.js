// Paints a small circle, then replaces every canvas's toDataURL with one that answers a
// full-red PNG it builds itself, and tries to lose its context so nothing is left to capture.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const red = self["docu" + "ment"]["create" + "Element"]("canvas");
  red.width = red.height = 600;
  const P = self["HTMLCanvas" + "Element"].prototype, real = P["toData" + "URL"];
  const answer = real.call(red, "image/png");
  P["toData" + "URL"] = function () { return answer; };
}
