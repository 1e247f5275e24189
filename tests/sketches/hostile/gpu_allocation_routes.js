// GPU memory by routes other than texImage2D level 0: mip levels, cube faces, compressed and
// storage uploads, buffers, and WebGL drawing buffers resized after their context exists.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const gl = drawingContext, hoard = [];
  const keep = (f) => { try { f(); } catch (e) {} };
  for (let i = 0; i < 8; i++) {
    keep(() => { const t = gl.createTexture(); gl.bindTexture(gl.TEXTURE_2D, t); gl.texImage2D(gl.TEXTURE_2D, 1, gl.RGBA, 4096, 4096, 0, gl.RGBA, gl.UNSIGNED_BYTE, null); hoard.push(t); });
    keep(() => { const t = gl.createTexture(); gl.bindTexture(gl.TEXTURE_CUBE_MAP, t); gl.texImage2D(gl.TEXTURE_CUBE_MAP_POSITIVE_Y, 0, gl.RGBA, 2048, 2048, 0, gl.RGBA, gl.UNSIGNED_BYTE, null); hoard.push(t); });
    keep(() => { const b = gl.createBuffer(); gl.bindBuffer(gl.ARRAY_BUFFER, b); gl.bufferData(gl.ARRAY_BUFFER, 64 << 20, gl.STATIC_DRAW); hoard.push(b); });
    keep(() => { const t = gl.createTexture(); gl.bindTexture(gl.TEXTURE_2D, t); gl.texStorage2D(gl.TEXTURE_2D, 1, gl.RGBA8, 4096, 4096); hoard.push(t); });
  }
  Promise.resolve().then(() => {
    for (let i = 0; i < 3; i++) keep(() => { const c = new OffscreenCanvas(16, 16); c.getContext('webgl2'); c.width = 8192; c.height = 8192; hoard.push(c); });
  });
}
