// Paint from the page's turn: p5's own functions, bound, handed to promise jobs and a timer, so no
// sketch frame is on the stack when they paint, and after the painting says it is done.
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  const jobs = Promise.resolve();
  jobs.then(fill.bind(null, 200, 30, 30)).then(rect.bind(null, 0, 0, 600, 120));
  setTimeout(rect.bind(null, 0, 480, 600, 120), 0);
}
