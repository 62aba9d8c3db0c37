#!/usr/bin/env python3
"""The bench "web" pipeline (bench/web.json5, or bench/web-marks.json5 with --marks) in pyvips.

    vips_web.py OUTDIR FILE... [--marks [--logo PNG]] [--full | --thumb N] [--jobs N] [--system-libvips] [--rss]

Per file: vips thumbnail (JPEG shrink-on-load, EXIF auto-orient, Lanczos-3, long side 2048,
never upscaled), then jpegsave Q=88, 4:2:0, baseline Huffman (optimize_coding off), no metadata.
OUTDIR/<stem>.jpg.

--marks             also the marks of bench/web-marks.json5, every size a fraction of the short
                    side s of the resized photo:
                    text  "\u00a9 Example Studio 2026", DejaVu Sans Bold (vips text with the font
                          file), capitals 3.5 % of s, white at 85 %; right edge of the ink 3 % of s
                          from the right, baseline 3 % of s above the bottom (as PhotoFinish
                          places it); shadow: the text's mask Gaussian-blurred (sigma 0.004 s),
                          black at 35 %, moved 0.001 s right and down
                    logo  --logo (default: the repo's etc/photofinish/templates/logos/studio.png)
                          thumbnailed (premultiplied Lanczos-3) to 16 % of s wide, alpha x 0.8,
                          top-left, 2.25 % of the width from the left and 2.25 % of the height
                          from the top (the template's padding: a fraction of each axis)
                    The mark images are made once per short side and kept (as a daemon would);
                    per photo the work is one composite of logo, shadow and text over the frame
                    (the one form that is safe on a sequential, streaming source).

--full              full resolution (bench/full-marks.json5): no resize; the file is read
                    sequentially (streaming), and a photo that must be turned (EXIF 5-8) is
                    decoded into memory first, then autorot (a 90-degree turn needs every pixel).

--thumb N           the thumbnail row (bench/thumb.json5, imgproxy's benchmark): vips thumbnail
                    to fit N x N (shrink-on-load, Lanczos-3), then jpegsave Q=80, 4:2:0.

--jobs N            N worker processes (fork), each with VIPS_CONCURRENCY=1 (default 2);
                    --jobs 1 runs in this process with libvips' own thread pool.
--system-libvips    use the distro libvips (pyvips ABI mode) instead of the pyvips-binary wheel,
                    whose libheif has no HEVC decoder: needed for .heic.
--rss               print each process's own peak RSS (getrusage) to stderr, to check what
                    GNU time's %M reports for the process tree.
"""
import argparse
import math
import os
import resource
import sys

pyvips = None   # imported in the process that does the work, after VIPS_CONCURRENCY is set
SAVE = {}

FONT_FILE = "/usr/share/fonts/truetype/dejavu/DejaVuSans-Bold.ttf"
FONT_NAME = "DejaVu Sans Bold"
TEXT = "\u00a9 Example Studio 2026"
CAP_EM = 1493 / 2048            # DejaVu Sans Bold: OS/2 capHeight / unitsPerEm
CAP, MARGIN, TEXT_OPACITY = 0.035, 0.03, 0.85
SHADOW_OPACITY, SHADOW_BLUR, SHADOW_OFFSET = 0.35, 0.004, 0.001
LOGO_WIDTH, LOGO_PADDING, LOGO_OPACITY = 0.16, 0.0225, 0.8
LOGO = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                    "../../etc/photofinish/templates/logos/studio.png")
MARKS = False
FULL = False
THUMB = 0
_marks = {}     # short side -> (logo, shadow, text, baseline row in text, shadow pad, offset)


def setup(threads, system):
    global pyvips
    if threads:
        os.environ["VIPS_CONCURRENCY"] = str(threads)
    if system:
        sys.modules["_libvips"] = None   # hide the wheel's binary module: pyvips falls back to ABI mode
    import pyvips as p
    pyvips = p
    pyvips.cache_set_max(0)              # distinct files: nothing to reuse
    SAVE.update(Q=88, optimize_coding=False, interlace=False, subsample_mode="on")
    SAVE.update({"keep": "none"} if p.at_least_libvips(8, 15) else {"strip": True})


def marks(s):
    """The mark images for short side s, made once and kept in memory."""
    if s in _marks:
        return _marks[s]
    font = f"{FONT_NAME} {CAP * s / CAP_EM:.3f}"
    # vips text returns the ink box; xoffset/yoffset place it against the layout's origin, so
    # the bottom of an "H" (the baseline) gives the baseline's row inside the text's ink box
    mask = pyvips.Image.text(TEXT, font=font, fontfile=FONT_FILE, dpi=72)
    h = pyvips.Image.text("H", font=font, fontfile=FONT_FILE, dpi=72)
    baseline = h.get("yoffset") + h.height - mask.get("yoffset")
    alpha = (mask * TEXT_OPACITY + 0.5).cast("uchar")
    text = alpha.new_from_image([255, 255, 255]).bandjoin(alpha).copy(interpretation="srgb")
    sigma = SHADOW_BLUR * s
    pad = math.ceil(3 * sigma)
    blurred = mask.embed(pad, pad, mask.width + 2 * pad, mask.height + 2 * pad) \
                  .gaussblur(sigma, min_ampl=0.005)
    salpha = (blurred * SHADOW_OPACITY + 0.5).cast("uchar")
    shadow = salpha.new_from_image([0, 0, 0]).bandjoin(salpha).copy(interpretation="srgb")
    lw = round(LOGO_WIDTH * s)
    logo = pyvips.Image.thumbnail(LOGO, lw, height=10 * lw)     # premultiplied Lanczos-3
    logo = logo[0:3].bandjoin((logo[3] * LOGO_OPACITY + 0.5).cast("uchar"))
    _marks[s] = (logo.copy_memory(), shadow.copy_memory(), text.copy_memory(),
                 baseline, pad, round(SHADOW_OFFSET * s))
    return _marks[s]


def finish(img):
    w, h = img.width, img.height
    s = min(w, h)
    m = round(MARGIN * s)
    logo, shadow, text, baseline, pad, off = marks(s)
    tx, ty = w - m - text.width, h - m - baseline
    out = img.composite([logo, shadow, text], ["over", "over", "over"],
                        x=[round(LOGO_PADDING * w), tx - pad + off, tx],
                        y=[round(LOGO_PADDING * h), ty - pad + off, ty])
    return out[0:3]


def web(job):
    path, outdir = job
    if FULL:
        img = pyvips.Image.new_from_file(path, access="sequential")
        if img.get_typeof("orientation") and img.get("orientation") not in (0, 1):
            img = pyvips.Image.new_from_file(path, memory=True).autorot()
    elif THUMB:
        img = pyvips.Image.thumbnail(path, THUMB, height=THUMB, size="down")
    else:
        img = pyvips.Image.thumbnail(path, 2048, height=2048, size="down")
    if MARKS:
        img = finish(img)
    img.jpegsave(os.path.join(outdir, os.path.splitext(os.path.basename(path))[0] + ".jpg"),
                 **dict(SAVE, Q=80) if THUMB else SAVE)
    return own_rss()


def own_rss():
    return os.getpid(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss   # KiB on Linux


def main():
    global MARKS, LOGO, FULL, THUMB
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--system-libvips", action="store_true")
    ap.add_argument("--rss", action="store_true")
    ap.add_argument("--marks", action="store_true")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--thumb", type=int, default=0)
    ap.add_argument("--logo", default=LOGO)
    a = ap.parse_args()
    MARKS, LOGO, FULL, THUMB = a.marks, a.logo, a.full, a.thumb
    os.makedirs(a.outdir, exist_ok=True)
    jobs = [(f, a.outdir) for f in a.files]
    rss = {}   # pid -> own peak RSS, as last reported
    if a.jobs <= 1:
        setup(None, a.system_libvips)
        rss.update(web(j) for j in jobs)
    else:
        import multiprocessing as mp
        with mp.get_context("fork").Pool(a.jobs, setup, (1, a.system_libvips)) as pool:
            rss.update(pool.imap_unordered(web, jobs, chunksize=1))
    if a.rss:
        rss.update([own_rss()])
        for pid, kb in sorted(rss.items(), key=lambda x: -x[1]):
            print(f"vips_web.py pid {pid}: own peak RSS {kb / 1024:.1f} MiB", file=sys.stderr)


if __name__ == "__main__":
    main()
