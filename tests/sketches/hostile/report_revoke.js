// Tries to take back what the page reports: hunts the window for the page's report channel and
// replaces it, breaks JSON.stringify and console.error, then draws text (which is reported at once).
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  for (const name of Object.getOwnPropertyNames(self)) {
    if (/salon|report|binding/i.test(name)) { try { self[name] = () => {}; delete self[name]; } catch (e) { /* fixed */ } }
  }
  try { JSON.stringify = () => "{}"; } catch (e) { /* frozen */ }
  try { console.error = () => {}; } catch (e) { /* kept */ }
  try { self["te" + "xt"]("TEN OUT OF TEN", 20, 20); } catch (e) { /* refused, and already reported */ }
}
