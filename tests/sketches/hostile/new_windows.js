// Realms that are not frames: a new window, a rewritten document, shared and dedicated workers
// from blob: and data: URLs, a worklet; each tried from a promise job.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const run = (f) => Promise.resolve().then(f).catch(() => {});
  const w = self['wind' + 'ow'];
  run(() => { const p = w['op' + 'en']('about:blank'); p.fetch('http://127.0.0.1:__PORT__/popup'); });
  run(() => { const d = w['docu' + 'ment']; d['wr' + 'ite']('<iframe></iframe>'); });
  run(() => new w['Shared' + 'Worker']('data:text/javascript,fetch("http://127.0.0.1:__PORT__/shared")'));
  run(() => { const B = w['Bl' + 'ob']; new w['Wor' + 'ker'](URL.createObjectURL(new B(['fetch("http://127.0.0.1:__PORT__/blob")']))); });
  run(() => w.CSS.paintWorklet.addModule('data:text/javascript,registerPaint("x", class { paint() {} })'));
  run(() => new w.AudioContext().audioWorklet.addModule('data:text/javascript,fetch("http://127.0.0.1:__PORT__/audio")'));
}
