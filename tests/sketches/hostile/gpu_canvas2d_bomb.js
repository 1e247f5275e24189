// Holds ever more 4096x4096 2D canvases, each filled so its pixels exist: 64 MB each, without end.
// Where Canvas2D is drawn on the card (the vulkan-canvas path) they are GPU memory.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const hoard = [];
  for (let i = 0; i < 100000; i++) {
    const c = new OffscreenCanvas(4096, 4096);
    const g = c.getContext("2d");
    g.fillRect(0, 0, 4096, 4096);
    hoard.push(c);
  }
}
