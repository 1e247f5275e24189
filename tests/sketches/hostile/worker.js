function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const w = 'Wor' + 'ker';
  try { new self[w]('data:text/javascript,fetch("http://127.0.0.1:__PORT__/worker")'); } catch (e) {}
  try { const b = new Blob(['fetch("http://127.0.0.1:__PORT__/blobworker")']); new self[w](URL.createObjectURL(b)); } catch (e) {}
}
