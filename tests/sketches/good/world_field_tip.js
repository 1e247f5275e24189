// grass in a breeze — a flow field and a custom brush tip, both functions of the sketch's
function setup() {
  createCanvas(600, 600, WEBGL);
  angleMode(DEGREES);
  background("#f3f0e2");
  brush.addField("breeze", (t, field) => {
    for (let c = 0; c < field.length; c++) for (let r = 0; r < field[0].length; r++) field[c][r] = 40 * sin(c * 3 + r * 2 + t);
    return field;
  });
  brush.add("blade", {
    type: "custom", weight: 6, scatter: 0.1, sharpness: 0.5, grain: 4, opacity: 120, spacing: 0.6, blend: true,
    pressure: [0.6, 1.2], rotate: "natural",
    tip: (surface) => { surface.fill(0); surface.rect(-10, -30, 20, 60); },
  });
  brush.field("breeze");
  brush.set("blade", "#5f8f4e", 1);
  for (let i = 0; i < 40; i++) brush.flowLine(random(-280, 280), random(0, 250), random(80, 200), -90);
  brush.noField();
  brush.noStroke();
  brush.fill("#d9a441", 160);
  brush.circle(150, -150, 50);
}
