// The paper: a method of p5's renderer that background() calls is replaced, so that hard shapes
// land while the paper is being laid (every WebGL call is allowed then).
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const r = p5.instance._renderer;
  const gl = r.GL;
  r.background = function () {
    gl.enable(gl.SCISSOR_TEST);
    for (let i = 0; i < 6; i++) {
      gl.scissor(i * 100, 0, 50, 600);
      gl.clearColor(0.1, 0.1, 0.4, 1);
      gl.clear(gl.COLOR_BUFFER_BIT);
    }
    gl.disable(gl.SCISSOR_TEST);
  };
  background(255, 0);
}
