// One sketch's fault on another: hundreds of full-canvas washes that hold the browser (its main
// thread and its GPU process) far past any timeout. The next sketch must not pay for them.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  brush.noStroke();
  for (let i = 0; i < 2000; i++) {
    brush.fill("#3a6ea5", 8);
    brush.fillBleed(0.4);
    brush.fillTexture(1, 1);
    brush.rect(-300, -300, 600, 600);
  }
}
