// A sketch that finishes clean (so its page is reused) and tries to leave something for the
// next document: the window's name, storage of every kind, globals and a patched p5, and, from
// its unload handler, history entries and the name again.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const w = self;
  w["na" + "me"] = "left by the sketch before";
  for (const store of ["local" + "Storage", "session" + "Storage"]) {
    try { w[store].setItem("left", "1"); } catch (e) {}
  }
  try { w["docu" + "ment"]["coo" + "kie"] = "left=1"; } catch (e) {}
  try { w["indexed" + "DB"].open("left"); } catch (e) {}
  w.leftBehind = 1;
  p5.prototype.leftBehind = 1;
  w.addEventListener("page" + "hide", () => {
    w["na" + "me"] = "left on the way out";
    for (let i = 0; i < 5; i++) w["hist" + "ory"]["push" + "State"](null, "", "#left" + i);
  });
}
