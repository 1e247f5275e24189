// A painting made without p5.brush: a 2D canvas drawn from promise jobs (bound natives, so no
// sketch frame is on the stack) and handed to p5 as its canvas, hoping to be the one captured.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const d = self['docu' + 'ment'];
  const c = d['create' + 'Element']('canvas');
  c.width = c.height = 600;
  const inst = this;
  Promise.resolve('2d').then(c.getContext.bind(c)).then((g) => {
    g.fillStyle = '#c03';
    g.fillRect(0, 0, 600, 600);
    inst.canvas = c;
    self._renderer && (self._renderer.canvas = c);
  });
}
