// koi — p5's helpers: vectors, colours, noise, Math, console
function setup() {
  createCanvas(600, 600, WEBGL);
  background(color("#e9f0ee"));
  brush.scaleBrushes(2);
  brush.noStroke();
  const start = createVector(-200, 50), end = createVector(200, -40);
  const orange = color(232, 115, 74), pale = color("#f7d9b8");
  console.log("painting koi", start.toString(), typeof orange);
  for (let i = 0; i <= 10; i++) {
    const t = i / 10;
    const p = start.copy().lerp(end, t);
    p.y += 40 * sin(t * TWO_PI) + map(noise(t * 3), 0, 1, -10, 10);
    brush.fill(lerpColor(orange, pale, t), 120);
    brush.fillBleed(0.2);
    brush.circle(p.x, p.y, lerp(60, 15, t) + Math.random() * 4);
  }
  if (red(orange) !== 232 || typeof orange !== "string") throw new Error("colours read wrong");
}
