// Hands p5.brush a field function (which p5.brush calls on the sketch's behalf) that paints a
// bare rect and a raw clear of its own while brush.flowLine is on the stack.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  let painted = false;
  brush.addField("sneaky", (t, field) => {
    if (!painted) {
      painted = true;
      fill(200, 30, 30);
      self["re" + "ct"](0, 0, 200, 200);
      const gl = self["drawing" + "Context"];
      gl.clearColor(0, 0, 0, 1);
      gl.clear(gl.COLOR_BUFFER_BIT);
    }
    return field;
  });
  brush.field("sneaky");
  brush.set("HB", "#222222", 2);
  brush.flowLine(100, 500, 300, 0);
}
