#!/usr/bin/env python3
"""The bench "web" pipeline (bench/web.json5) in pyvips.

    vips_web.py OUTDIR FILE... [--jobs N] [--system-libvips] [--rss]

Per file: vips thumbnail (JPEG shrink-on-load, EXIF auto-orient, Lanczos-3, long side 2048,
never upscaled), then jpegsave Q=88, 4:2:0, baseline Huffman (optimize_coding off), no metadata.
OUTDIR/<stem>.jpg.

--jobs N            N worker processes (fork), each with VIPS_CONCURRENCY=1 (default 2);
                    --jobs 1 runs in this process with libvips' own thread pool.
--system-libvips    use the distro libvips (pyvips ABI mode) instead of the pyvips-binary wheel,
                    whose libheif has no HEVC decoder: needed for .heic.
--rss               print each process's own peak RSS (getrusage) to stderr, to check what
                    GNU time's %M reports for the process tree.
"""
import argparse
import os
import resource
import sys

pyvips = None   # imported in the process that does the work, after VIPS_CONCURRENCY is set
SAVE = {}


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


def web(job):
    path, outdir = job
    img = pyvips.Image.thumbnail(path, 2048, height=2048, size="down")
    img.jpegsave(os.path.join(outdir, os.path.splitext(os.path.basename(path))[0] + ".jpg"), **SAVE)
    return own_rss()


def own_rss():
    return os.getpid(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss   # KiB on Linux


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outdir")
    ap.add_argument("files", nargs="+")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--system-libvips", action="store_true")
    ap.add_argument("--rss", action="store_true")
    a = ap.parse_args()
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
