// A fragment shader of its own that loops for as long as the GPU lets it.
const VERT = `precision highp float; attribute vec3 aPosition; void main() { gl_Position = vec4(aPosition, 1.0); }`;
const FRAG = `precision highp float; uniform float t;
void main() { float a = 0.0; for (int i = 0; i < 100000000; i++) { a += sin(float(i) * t); } gl_FragColor = vec4(a, 0.0, 0.0, 1.0); }`;
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  const s = createShader(VERT, FRAG);
  shader(s);
  s.setUniform("t", 0.5);
  plane(600, 600);
  brush.fill("#3a6ea5", 200);
  brush.circle(0, 0, 150);
}
