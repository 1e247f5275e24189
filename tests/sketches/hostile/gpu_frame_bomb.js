// Holds the pixels other ways than textures and canvases, each error swallowed: video frames of a
// large canvas (copies, on the card where Canvas2D is drawn there), a canvas stream, and WebGPU.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const hoard = [];
  const c = document.createElement("canvas");
  c.width = c.height = 4096;
  for (let i = 0; i < 40; i++) {  // 40 x 64 MB, more than the budget
    try { hoard.push(new VideoFrame(c, { timestamp: i })); } catch (e) { /* keep going */ }
  }
  try { hoard.push(c.captureStream(60)); } catch (e) { /* keep going */ }
  const nav = self['navi' + 'gator'];
  try { nav.gpu.requestAdapter().then((a) => a.requestDevice()).then((d) => hoard.push(d)); } catch (e) { /* keep going */ }
}
