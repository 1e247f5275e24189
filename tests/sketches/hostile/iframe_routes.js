// A frame inserted by every route that is not appendChild, each from a job of its own, and its
// window's network APIs: fetch, XHR, WebSocket, sendBeacon, a Worker, WebRTC.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const d = self['docu' + 'ment'];
  const use = (f) => {
    const W = f && (f.contentWindow || (f.contentDocument && f.contentDocument.defaultView));
    if (!W) return;
    try { W.fetch('http://127.0.0.1:__PORT__/frame-fetch'); } catch (e) {}
    try { const x = new W.XMLHttpRequest(); x.open('GET', 'http://127.0.0.1:__PORT__/frame-xhr'); x.send(); } catch (e) {}
    try { new W.WebSocket('ws://127.0.0.1:__PORT__/frame-ws'); } catch (e) {}
    try { W.navigator.sendBeacon('http://127.0.0.1:__PORT__/frame-beacon', 'x'); } catch (e) {}
    try { new W.Worker(W.URL.createObjectURL(new W.Blob(['fetch("http://127.0.0.1:__PORT__/frame-worker")']))); } catch (e) {}
    try { new W.RTCPeerConnection({ iceServers: [{ urls: 'stun:127.0.0.1:__UDP__' }] }).createDataChannel('x'); } catch (e) {}
  };
  const make = (tag) => d['create' + 'Element'](tag);
  const routes = [
    () => { const f = make('iframe'); const r = d.createRange(); r.selectNode(d.body.firstChild); r.insertNode(f); return f; },
    () => { const f = make('iframe'); [f].forEach(d.body.appendChild.bind(d.body)); return f; },
    () => { const f = make('iframe'); d.body.append(f); return f; },
    () => { const f = make('iframe'); d.body.insertAdjacentElement('beforeend', f); return f; },
    () => { const f = make('iframe'); const frag = d.createDocumentFragment(); frag.appendChild(f); d.body.replaceChildren(...d.body.childNodes, frag); return f; },
    () => { const div = make('div'); div.appendChild(make('iframe')); d.body.appendChild(div); return div.firstChild; },
    () => { const o = make('object'); o.data = 'data:text/html,<b>x</b>'; d.body.appendChild(o); return o; },
    () => { const host = d.body.lastElementChild; const root = host.attachShadow({ mode: 'open' }); const f = make('iframe'); root.appendChild(f); return f; },
    () => { const f = make('iframe'); f.srcdoc = '<script>fetch("http://127.0.0.1:__PORT__/srcdoc")<\/script>'; d.body.appendChild(f); return f; },
  ];
  for (const route of routes) Promise.resolve().then(() => use(route())).catch(() => {});
  queueMicrotask(() => { try { use(routes[2]()); } catch (e) {} });
}
