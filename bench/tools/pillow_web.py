#!/usr/bin/env python3
"""The bench pipelines in Pillow: "web" (bench/web.json5), with --marks "web+marks"
(bench/web-marks.json5), with --full --marks "full+marks" (bench/full-marks.json5).

    pillow_web.py OUTDIR FILE... [--marks [--logo PNG]] [--full] [--jobs N]

Per file, web: JPEG draft (DCT shrink-on-load at the largest 1/2^k scale that still covers
the target, the rule vips thumbnail and PhotoFinish use), Lanczos to long side 2048 in stored
orientation, then EXIF auto-orient on the small image. --full: EXIF auto-orient at full size,
no resize. Then jpeg Q=88, 4:2:0, baseline Huffman (optimize off), no metadata: OUTDIR/<stem>.jpg.

--marks  the marks of vips_web.py --marks, drawn the same way, every size a fraction of the
         short side s of the photo being written: text "\u00a9 Example Studio 2026", DejaVu Sans
         Bold, capitals 3.5 % of s, white at 85 %, ink's right edge 3 % of s from the right,
         baseline 3 % of s above the bottom; its shadow: the text's mask blurred (Gaussian,
         sigma 0.004 s), black at 35 %, 0.001 s right and down; the logo thumbnailed
         (premultiplied Lanczos) to 16 % of s wide, alpha x 0.8, top-left, 2.25 % of the width
         and of the height from the edges. Mark images are made once per short side and kept.
         Pasted with a mask: only the marked areas are touched.
--jobs N N worker processes (fork; Pillow itself runs one thread here), default 2.
"""
import argparse
import math
import os

from PIL import Image, ImageDraw, ImageFilter, ImageFont, ImageOps

FONT_FILE = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
TEXT = "\u00a9 Example Studio 2026"
CAP_EM = 1493 / 2048            # DejaVu Sans Bold: OS/2 capHeight / unitsPerEm
CAP, MARGIN, TEXT_OPACITY = 0.035, 0.03, 0.85
SHADOW_OPACITY, SHADOW_BLUR, SHADOW_OFFSET = 0.35, 0.004, 0.001
LOGO_WIDTH, LOGO_PADDING, LOGO_OPACITY = 0.16, 0.0225, 0.8
LONG_SIDE, QUALITY = 2048, 88
LOGO = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "../../etc/photofinish/templates/logos/studio.png")
MARKS = False
FULL = False
_marks = {}


def marks(s):
    """Text mask, shadow mask, logo (RGB + alpha) and their offsets for short side s."""
    if s in _marks:
        return _marks[s]
    font = ImageFont.truetype(FONT_FILE, CAP * s / CAP_EM)
    left, top, right, bottom = font.getbbox(TEXT, anchor="ls")   # ink box around the baseline origin
    mask = Image.new("L", (right - left, bottom - top), 0)
    ImageDraw.Draw(mask).text((-left, -top), TEXT, font=font, anchor="ls", fill=255)
    text = mask.point(lambda v: round(v * TEXT_OPACITY))
    sigma = SHADOW_BLUR * s
    pad = math.ceil(3 * sigma)
    padded = Image.new("L", (mask.width + 2 * pad, mask.height + 2 * pad), 0)
    padded.paste(mask, (pad, pad))
    shadow = padded.filter(ImageFilter.GaussianBlur(sigma)).point(lambda v: round(v * SHADOW_OPACITY))
    lw = round(LOGO_WIDTH * s)
    logo = Image.open(LOGO).convert("RGBA")
    lh = max(1, round(logo.height * lw / logo.width))
    logo = logo.convert("RGBa").resize((lw, lh), Image.LANCZOS).convert("RGBA")
    alpha = logo.getchannel("A").point(lambda a: round(a * LOGO_OPACITY))
    _marks[s] = (text, shadow, pad, top, logo.convert("RGB"), alpha, round(SHADOW_OFFSET * s))
    return _marks[s]


def finish(im):
    w, h = im.size
    s = min(w, h)
    m = round(MARGIN * s)
    text, shadow, pad, top, logo, alpha, off = marks(s)
    im.paste(logo, (round(LOGO_PADDING * w), round(LOGO_PADDING * h)), alpha)
    tx, ty = w - m - text.width, h - m + top          # the ink box's top-left: baseline at h - m
    im.paste((0, 0, 0), (tx - pad + off, ty - pad + off), shadow)
    im.paste((255, 255, 255), (tx, ty), text)
    return im


def fit(w, h):
    if max(w, h) <= LONG_SIDE:
        return w, h
    if w >= h:
        return LONG_SIDE, max(1, round(h * LONG_SIDE / w))
    return max(1, round(w * LONG_SIDE / h)), LONG_SIDE


def process(job):
    path, outdir = job
    im = Image.open(path)
    if FULL:
        im = ImageOps.exif_transpose(im)
        im = im.convert("RGB") if im.mode != "RGB" else im
    else:
        tw, th = fit(*im.size)
        if im.format == "JPEG":
            im.draft("RGB", (tw, th))
        im = im.convert("RGB") if im.mode != "RGB" else im
        im = im.resize((tw, th), Image.LANCZOS, reducing_gap=None)
        im = ImageOps.exif_transpose(im)
    if MARKS:
        im = finish(im)
    im.save(os.path.join(outdir, os.path.splitext(os.path.basename(path))[0] + ".jpg"), "JPEG",
            quality=QUALITY, subsampling="4:2:0", optimize=False)


def main():
    global MARKS, LOGO, FULL
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--marks", action="store_true")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--logo", default=LOGO)
    a = ap.parse_args()
    MARKS, LOGO, FULL = a.marks, a.logo, a.full
    os.makedirs(a.outdir, exist_ok=True)
    jobs = [(f, a.outdir) for f in a.files]
    if a.jobs <= 1:
        for j in jobs:
            process(j)
    else:
        import multiprocessing as mp
        with mp.get_context("fork").Pool(a.jobs) as pool:
            for _ in pool.imap_unordered(process, jobs, chunksize=1):
                pass


if __name__ == "__main__":
    main()
