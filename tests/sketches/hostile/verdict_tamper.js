// Text, then an attempt to erase the verdict: the page's own state, a second start, a claim
// of the guard's internals, a replaced __salon, an early finish with a canvas of its own.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const S = self['__sal' + 'on'];
  try { self['te' + 'xt']('BEST', 10, 10); } catch (e) {}
  try { S.violations.clear(); } catch (e) {}
  try { S.claim().violations.clear(); } catch (e) {}
  try { S.start(1); } catch (e) {}
  try { self.__salon = { start() {} }; } catch (e) {}
  try { Object.defineProperty(self, '__salon', { value: {} }); } catch (e) {}
  try { S.finish('ok', document.createElement('canvas')); } catch (e) {}
}
