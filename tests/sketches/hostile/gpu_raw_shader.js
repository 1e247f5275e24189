// The same looping shader compiled straight on p5's WebGL context, past p5's shader API.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  brush.fill("#3a6ea5", 200);
  brush.circle(0, 0, 150);
  const gl = drawingContext;
  const fs = gl.createShader(gl.FRAGMENT_SHADER);
  gl.shaderSource(fs, "precision highp float; void main() { float a = 0.0; for (int i = 0; i < 100000000; i++) { a += 1.0; } gl_FragColor = vec4(a); }");
  gl.compileShader(fs);
}
