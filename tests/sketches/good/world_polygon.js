// still life of pebbles — brush.Polygon objects filled and outlined
function pebble(cx, cy, r, wobble) {
  const pts = [];
  for (let a = 0; a < 360; a += 30) {
    const rr = r * (1 + wobble * (noise(cx * 0.01 + cos(a), cy * 0.01 + sin(a)) - 0.5));
    pts.push([cx + rr * cos(a), cy + rr * sin(a)]);
  }
  return new brush.Polygon(pts);
}
function setup() {
  createCanvas(600, 600, WEBGL);
  angleMode(DEGREES);
  background("#f4efe4");
  brush.scaleBrushes(2);
  const tones = ["#8fa3b0", "#b7a58c", "#6f7f73", "#c9b9a3"];
  for (let i = 0; i < 7; i++) {
    const p = pebble(random(-200, 200), random(-150, 200), random(40, 90), 0.5);
    brush.fill(tones[i % tones.length], 150);
    brush.fillBleed(0.2);
    brush.noStroke();
    p.fill();
    brush.set("2B", "#3b3b3b", 1);
    p.draw();
    if (p.vertices.length !== 12 || p.a[0].length !== 2) throw new Error("a polygon's fields read wrong");
  }
}
