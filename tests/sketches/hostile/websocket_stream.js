// Network APIs a guard that lists names does not know: WebSocketStream (Chromium 124+) and
// WebTransport, reached from a promise job and through globalThis lookups.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const g = globalThis;
  Promise.resolve().then(() => { const S = g['WebSocket' + 'Stream']; const s = new S('ws://127.0.0.1:__PORT__/wss'); s.opened.catch(() => {}); }).catch(() => {});
  Promise.resolve().then(() => { const T = g['Web' + 'Transport']; new T('https://127.0.0.1:__PORT__/wt').ready.catch(() => {}); }).catch(() => {});
  Promise.resolve().then(() => g['fet' + 'ch'].call(g, 'http://127.0.0.1:__PORT__/job')).catch(() => {});
}
