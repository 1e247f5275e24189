function setup() {
  createCanvas(600, 600, WEBGL);
  const c = self['docu' + 'ment']['createEl' + 'ement']('canvas');
  const g = c['getCon' + 'text']('2d');
  g.fillRect(0, 0, 600, 600);
  brush.circle(300, 300, 100);
}
