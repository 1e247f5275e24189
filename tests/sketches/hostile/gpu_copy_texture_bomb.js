// 32 textures of 4096x4096 (2 GiB) made with copyTexImage2D on p5's own context, from a job.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const gl = drawingContext, hoard = [];
  Promise.resolve().then(() => {
    for (let i = 0; i < 32; i++) {
      const t = gl.createTexture();
      gl.bindTexture(gl.TEXTURE_2D, t);
      gl.copyTexImage2D(gl.TEXTURE_2D, 0, gl.RGBA, 0, 0, 4096, 4096, 0);
      hoard.push(t);
    }
  });
}
