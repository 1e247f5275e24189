// Makes Math.max answer 0 (a budget computed as max(0, bytes) would charge nothing), then
// allocates 2 GiB of RGBA32F textures on p5's own context.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  try { Math.max = () => 0; } catch (e) { /* frozen */ }
  const gl = self["drawing" + "Context"];
  const held = [];
  for (let i = 0; i < 32; i++) {
    const t = gl.createTexture();
    gl.bindTexture(gl.TEXTURE_2D, t);
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA32F, 4096, 1024, 0, gl.RGBA, gl.FLOAT, null);
    held.push(t);
  }
}
