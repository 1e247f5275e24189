// Another realm's WebRTC: an about:blank frame brings an RTCPeerConnection the page never
// wrapped, and STUN binding requests are UDP, which passes neither routes nor proxy.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const d = self['docu' + 'ment'];
  const f = d['create' + 'Element']('ifr' + 'ame');
  d.body['append' + 'Child'](f);
  const W = f.contentWindow || self[0];
  const pc = new W['RTCPeer' + 'Connection']({ iceServers: [{ urls: 'stun:127.0.0.1:__UDP__' }] });
  pc.createDataChannel('x');
  pc.createOffer().then((o) => pc.setLocalDescription(o));
}
