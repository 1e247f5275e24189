// Copies one 2D canvas into ever more ImageBitmaps and keeps them all, both ways there are, each
// error swallowed: every bitmap is a copy of the pixels, on the card where Canvas2D is drawn there.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const c = new OffscreenCanvas(4096, 4096);
  c.getContext("2d").fillRect(0, 0, 4096, 4096);
  const hoard = [];
  for (let i = 0; i < 1000; i++) {
    try { createImageBitmap(c, 0, 0, 4096, 4096).then((b) => hoard.push(b)); } catch (e) { /* keep going */ }
  }
  for (let i = 0; i < 1000; i++) {
    try { hoard.push(c.transferToImageBitmap()); } catch (e) { /* keep going */ }
  }
}
