#!/usr/bin/env bash
# Before/after contact sheets of `harmonize` on real multi-photo folders: each folder is finished
# twice with photofinish run (bench/harmonize/plain.json5 and harmonize.json5: long side 1024,
# the same but for harmonize), and a sheet shows the outputs in batch order, as shot (top row of
# each pair) and harmonized (below), labelled with what the report says was done.
#
#   bench/harmonize/sheet.sh OUT FOLDER...     one OUT/<parent>-<folder>.jpg per folder
#
# Environment: PF (photofinish binary, default .build/release/photofinish), PER_ROW (photos a
# row, default 7), HEIGHT (a tile's height, default 150).
# Needs: Pillow (pip install pillow, or apt-get install python3-pil).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
PF=${PF:-$HERE/../../.build/release/photofinish}
[[ -x $PF ]] || { echo "photofinish not built ($PF): swift build -c release" >&2; exit 1; }
python3 -c 'import PIL' 2>/dev/null || { echo "needs Pillow: pip install pillow" >&2; exit 1; }
OUT=$1; shift
mkdir -p "$OUT"
TMP=$(mktemp -d); trap 'rm -rf "$TMP"' EXIT
for folder in "$@"; do
  folder=${folder%/}
  name=$(basename "$(dirname "$folder")")-$(basename "$folder")
  for t in plain harmonize; do
    "$PF" run --template "$HERE/$t.json5" --out "$TMP/$name-$t" "$folder" > /dev/null 2>&1 || true   # failed photos are left out
  done
  python3 - "$TMP/$name-plain" "$TMP/$name-harmonize" "$OUT/$name.jpg" "$name" "${PER_ROW:-7}" "${HEIGHT:-150}" <<'PY'
import glob, json, sys
from PIL import Image, ImageDraw, ImageFont
plain, harm, out, name, per, H = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
def report(folder):
    path = glob.glob(folder + "/*/report.json")[0]
    return path.rsplit("/", 1)[0], json.load(open(path))
pdir, pr = report(plain); hdir, hr = report(harm)
try:
    font = ImageFont.truetype("DejaVuSans.ttf", 11)
except OSError:
    font = ImageFont.load_default()
pairs = []
for a, b in zip(pr["items"], hr["items"]):
    if a["status"] != "ok" or b["status"] != "ok":
        continue
    rec = b["outputs"][0]["applied"].get("harmonize") or {}
    g, ev = rec.get("gains", [1, 1, 1]), rec.get("exposure", 0)
    words = ["gains %.2f %.2f %.2f" % (g[0], g[1], g[2]), "%+.2f EV" % ev + (" · again" if rec.get("again") else "")]
    tiles = []
    for folder, item in ((pdir, a), (hdir, b)):
        im = Image.open(folder + "/" + item["outputs"][0]["file"]).convert("RGB")
        tiles.append(im.resize((max(1, im.width * H // im.height), H)))
    pairs.append((a["source"], words, tiles))
rows = [pairs[i:i + per] for i in range(0, len(pairs), per)]
pad, label = 6, 44
def fit(text, width):  # a label cut to its tile's width
    while text and draw_probe.textlength(text, font=font) > width - 2:
        text = text[:-1]
    return text
draw_probe = ImageDraw.Draw(Image.new("RGB", (1, 1)))
height = 34 + sum(2 * H + label + 3 * pad for _ in rows)
s = hr.get("harmonize", {}).get("spread", {})
title = "%s: as shot (upper) and harmonize: true (lower)" % name
if s:
    title += " · white points ΔE %.1f → %.1f apart, exposures %.2f → %.2f EV" % (
        s["before"]["white"], s["after"]["white"], s["before"]["exposure"], s["after"]["exposure"])
width = max(max(sum(t[2][0].width + pad for t in row) for row in rows) + pad,
            int(draw_probe.textlength(title, font=font)) + 2 * pad)
sheet = Image.new("RGB", (width, height), (34, 34, 34))
draw = ImageDraw.Draw(sheet)
draw.text((pad, 10), title, fill=(235, 235, 235), font=font)
y = 34
for row in rows:
    x = pad
    for source, words, (before, after) in row:
        sheet.paste(before, (x, y)); sheet.paste(after, (x, y + H + pad))
        draw.text((x, y + 2 * H + pad + 3), fit(source, before.width), fill=(220, 220, 220), font=font)
        for n, line in enumerate(words):
            draw.text((x, y + 2 * H + pad + 16 + 13 * n), fit(line, before.width), fill=(150, 190, 230), font=font)
        x += before.width + pad
    y += 2 * H + label + 3 * pad
sheet.save(out, quality=85)
print(out)
PY
done
