function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const W = self['Web' + 'Socket'];
  try { new W('ws://127.0.0.1:__PORT__/ws'); } catch (e) {}
  const nav = self['navi' + 'gator'];
  try { nav['send' + 'Beacon']('http://127.0.0.1:__PORT__/beacon', 'x'); } catch (e) {}
  const I = self['Ima' + 'ge'];
  try { const im = new I(); im['sr' + 'c'] = 'http://127.0.0.1:__PORT__/pixel.png'; } catch (e) {}
}
