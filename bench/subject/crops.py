#!/usr/bin/env python3
"""Crops that cut no face: PhotoFinish's crops against libvips' attention smartcrop (what
imgproxy's smart gravity uses) on the real photos of people scripts/test-photos --bench
installs, for 1:1, 4:5, 9:16 and 16:9. A crop is good when no face is cut (every face at most
15 % or at least 85 % inside) and at least one face is whole.

    bench/subject/crops.py PHOTOFINISH [PHOTOS]     (PHOTOS default .build/test-photos)
Needs pyvips and numpy. The faces are the ones bench/subject/faces.sh lists (checked by eye)."""
import json, os, subprocess, sys, tempfile
import numpy as np
import pyvips

FACES = {
    "group-table.jpg": [(64, 285, 101, 101), (263, 174, 101, 101), (462, 307, 101, 101), (739, 374, 101, 101),
                        (894, 86, 101, 101), (1127, 296, 101, 101)],
    "obama.jpg": [(381, 151, 231, 231)], "obama2.jpg": [(183, 315, 238, 238)], "obama3.jpg": [(668, 318, 244, 244)],
    "biden.jpg": [(461, 270, 246, 246)], "astronaut.png": [(181, 85, 87, 87)], "messi5.jpg": [(233, 102, 26, 26)],
}
RATIOS = [(1, 1), (4, 5), (9, 16), (16, 9)]

def inside(face, box):
    x, y, w, h = face; bx, by, bw, bh = box
    iw = min(x + w, bx + bw) - max(x, bx); ih = min(y + h, by + bh) - max(y, by)
    return 0 if iw <= 0 or ih <= 0 else iw * ih / (w * h)

def good(faces, box):
    shares = [inside(f, box) for f in faces]
    return all(s <= 0.15 or s >= 0.85 for s in shares) and any(s >= 0.999 for s in shares)

def window(w, h, rw, rh):  # aspect-fill crop size
    return (w, round(w * rh / rw)) if w * rh <= h * rw else (round(h * rw / rh), h)

def vips_box(path, rw, rh):
    """Where libvips' attention smartcrop puts the crop, found by matching it in the photo."""
    image = pyvips.Image.new_from_file(path).colourspace("srgb")[:3]
    w, h = image.width, image.height
    cw, ch = window(w, h, rw, rh)
    crop = image.smartcrop(cw, ch, interesting="attention")
    a = np.ndarray(buffer=image.write_to_memory(), dtype=np.uint8, shape=[h, w, 3]).astype(np.int32)
    c = np.ndarray(buffer=crop.write_to_memory(), dtype=np.uint8, shape=[ch, cw, 3]).astype(np.int32)
    if cw < w:
        best = min(range(w - cw + 1), key=lambda x: np.abs(a[::4, x:x + cw:4] - c[::4, ::4]).sum())
        return (best, 0, cw, ch)
    best = min(range(h - ch + 1), key=lambda y: np.abs(a[y:y + ch:4, ::4] - c[::4, ::4]).sum())
    return (0, best, cw, ch)

def main():
    pf = sys.argv[1]; photos = sys.argv[2] if len(sys.argv) > 2 else ".build/test-photos"
    names = [n for n in FACES if os.path.exists(os.path.join(photos, n))]
    with tempfile.TemporaryDirectory() as tmp:
        template = os.path.join(tmp, "t.json5")
        with open(template, "w") as f:
            f.write('{ version: 1, resize: { longSide: 1080 }, crops: ["1:1", "4:5", "9:16", "16:9"] }')
        subprocess.run([pf, "run", "--template", template, "--out", os.path.join(tmp, "out")]
                       + [os.path.join(photos, n) for n in names], check=True, capture_output=True)
        batch = os.path.join(tmp, "out", os.listdir(os.path.join(tmp, "out"))[0])
        report = json.load(open(os.path.join(batch, "report.json")))
    ours = theirs = total = 0
    rows = []
    for item in report["items"]:
        name = item["source"]; faces = FACES[name]
        for (rw, rh), out in zip(RATIOS, item["outputs"]):
            box = tuple(out["applied"]["crop"]["box"])
            v = vips_box(os.path.join(photos, name), rw, rh)
            total += 1; ours += good(faces, box); theirs += good(faces, v)
            rows.append(f"| {name} | {rw}:{rh} | {'yes' if good(faces, box) else 'no'} | {'yes' if good(faces, v) else 'no'} |")
    print("| photo | crop | PhotoFinish: no face cut, one whole | libvips attention |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    print(f"| **all** | | **{ours} of {total}** | **{theirs} of {total}** |")

main()
