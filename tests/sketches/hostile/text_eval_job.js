// Text handed to string-to-code routes from jobs whose stack holds no sketch frame: eval in a
// promise job, Function through a constructor chain, a string timer, a data: module import.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const src = "text('BEST PAINTING', -200, 0)";
  const ev = self['ev' + 'al'];
  Promise.resolve(src).then(ev).catch(() => {});
  Promise.resolve(src).then((s) => (() => {}).constructor(s)()).catch(() => {});
  try { self['set' + 'Timeout'](src, 0); } catch (e) {}
  import('data:text/javascript,' + encodeURIComponent('self.text("BEST", 0, 0)')).catch(() => {});
}
