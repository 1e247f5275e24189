// Empties every stack a "who called" check reads, then paints on a 2D canvas of its own.
function setup() {
  try { Error.stackTraceLimit = 0; } catch (e) { /* refused (frozen realm): try the bypass anyway */ }
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const c = self['docu' + 'ment']['createEl' + 'ement']('canvas');
  c['getCon' + 'text']('2d').fillRect(0, 0, 600, 600);
}
