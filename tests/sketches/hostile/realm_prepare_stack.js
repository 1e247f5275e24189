// Sets Error.prepareStackTrace so that every stack looks like p5.brush's own, then draws rects.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const fake = "Error\n    at t.rect (http://salon.sandbox/p5.brush.js:1:69238)\n    at t.rect (http://salon.sandbox/p5.brush.js:1:69238)";
  try { Error.prepareStackTrace = () => fake; } catch (e) { /* refused */ }
  try { Error.captureStackTrace = () => {}; } catch (e) { /* frozen */ }
  fill(200, 30, 30);
  for (let i = 0; i < 5; i++) self["re" + "ct"](20 + i * 100, 20, 60, 60);
}
