// Writes to the document by routes a method list misses: Range.insertNode, forEach(appendChild),
// a promise job, textContent of the body, an attribute on <html>.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const d = self['docu' + 'ment'];
  const h = d['create' + 'Element']('h1');
  h.append('a masterpiece');
  const r = d.createRange();
  r.selectNodeContents(d.body);
  r.insertNode(h);
  [d.createTextNode('best'), d.createTextNode('painting')].forEach(d.body.appendChild.bind(d.body));
  Promise.resolve().then(() => d.body.append('award winner'));
  requestAnimationFrame(() => d.documentElement.setAttribute('data-score', '10'));
}
