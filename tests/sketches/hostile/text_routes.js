// Text by routes that are not fillText: an SVG image with a <text> element, a font loaded from
// bytes, p5.Graphics text, textToPoints outlines painted with brush strokes, a draw() frame.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const svg = '<svg xmlns="http://www.w3.org/2000/svg" width="600" height="100"><text y="80" font-size="80">WIN</text></svg>';
  try { const im = new Image(); im.src = 'data:image/svg+xml,' + encodeURIComponent(svg); } catch (e) {}
  try { new FontFace('x', new ArrayBuffer(8)); } catch (e) {}
  try { const pg = self['create' + 'Graphics'](200, 100); pg['te' + 'xt']('WIN', 10, 50); } catch (e) {}
  try { const pts = self['textTo' + 'Points']; pts('WIN', 0, 0, 80); } catch (e) {}
}
function draw() {
  Promise.resolve().then(() => { const t = self['te' + 'xt']; t('BEST', 0, 0); }).catch(() => {});
}
