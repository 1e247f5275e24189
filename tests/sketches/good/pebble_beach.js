// Pebbles on a beach at low tide: many small rounded stones, like a page of o's.
function setup() {
  createCanvas(600, 600, WEBGL);
  pixelDensity(1);
  background("#f3ede2");
  brush.scaleBrushes(3);
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#9fc3cf", 150); brush.fillBleed(0.3); brush.rect(0, 0, 600, 220);
  brush.fill("#d8c7a8", 160); brush.rect(0, 220, 600, 380);
  const stones = ["#8d8478", "#b4aa9b", "#6f6a64", "#c9b9a0", "#9a8f80"];
  for (let i = 0; i < 140; i++) {
    brush.fill(stones[i % 5], 215); brush.fillBleed(0.05);
    brush.circle(random(600), 240 + random(350), random(5, 16));
  }
  brush.set("HB", "#4d4943", 0.8);
  for (let i = 0; i < 30; i++) { const x = random(600), y = 250 + random(340); brush.circle(x, y, random(6, 12)); }
}
