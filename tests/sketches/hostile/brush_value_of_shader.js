// Sketch code that p5.brush runs for it: a radius whose valueOf compiles a shader of its own and
// draws a bare plane with it, while brush.circle is on the stack above.
const VERT = `precision highp float; attribute vec3 aPosition; void main() { gl_Position = vec4(aPosition, 1.0); }`;
const FRAG = `precision highp float; void main() { gl_FragColor = vec4(1.0, 0.0, 0.0, 1.0); }`;
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, { valueOf() {
    try { self['sha' + 'der'](self['create' + 'Shader'](VERT, FRAG)); } catch (e) { /* refused: paint on */ }
    self['re' + 'ct'](0, 0, 600, 600);
    return 150;
  } });
}
