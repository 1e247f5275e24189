// Replaces String.prototype.includes (and indexOf) so that no stack line seems to name the sketch,
// then draws triangles.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  try { String.prototype.includes = function () { return false; }; String.prototype.indexOf = function () { return -1; }; } catch (e) { /* frozen */ }
  fill(230, 120, 0);
  for (let i = 0; i < 4; i++) self["tri" + "angle"](20 + i * 60, 580, 50 + i * 60, 480, 80 + i * 60, 580);
}
