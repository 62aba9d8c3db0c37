#!/usr/bin/env python3
"""Where a photo's CPU time goes: reads `perf script` output of a photofinish run recorded with
DWARF call graphs (bench/resample/profile.sh) and puts each sample in one step of the recipe.

    perf script -F comm,tid,ip,sym,dso,period,event -i perf.data \
        | profile.py PHOTOS CPU_SECONDS DECODE_ADDRESSES ENCODE_ADDRESSES

A sample's step is the first frame, from the leaf up, that names one (the resampler's kernels
under OutputLine are the preview's, else the output's). libjpeg's SIMD code has no unwind
information, so a sample whose leaf is in libjpeg is put in decode or encode by its address: the
nearest of the addresses `djpeg` alone and `cjpeg` alone were sampled at (DECODE_ADDRESSES,
ENCODE_ADDRESSES: one hex offset a line, from the same libjpeg). Prints a markdown table,
milliseconds a photo from the sample count scaled to CPU_SECONDS (the run's user + system time).
"""
import bisect
import collections
import re
import sys

STEPS = [  # (step, regex over a frame's symbol or library), tested leaf first
    ("resample: horizontal pass", r"rows_(avx2|sse2)|pf_resample_rows"),
    ("resample: pixel pairs", r"pairs_(avx2|sse2)|pf_resample_pairs"),
    ("resample: vertical pass", r"columns_(avx2|sse2)|pf_resample_columns"),
    ("resample: weights and rows", r"StreamingResizer|AxisWeights|unpremultiply|premultiply"),
    ("preview: box shrink", r"BoxShrink"),
    ("turning upright", r"UprightRows|UprightPlanes|BandedImage|Orientation"),
    ("marks", r"MarkPainter|MarkPlan|MarkAssets|composite|gaussianBlurred|Typesetting|libfreetype|libharfbuzz|CoverageMask"),
    ("SHA-256 of the file", r"libcrypto|SHA256"),
    ("colour (flatten, transform)", r"flatten|ColorTransform|liblcms"),
]
DECODE = r"JPEGDecoder|pf_jpeg_decoder|jpeg_read_|jpeg_start_decompress|jpeg_consume_input|openDecoder"
ENCODE = r"JPEGEncoder|pf_jpeg_encoder|jpeg_write_|jpeg_finish_compress|jpeg_start_compress|encodeImage|makeWriter"
REPORT = r"Report|report|Thumbnail|thumbnail|JSONEncoder|HTML"


def frames_of(block):
    out = []
    for line in block[1:]:
        m = re.match(r"\s*([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$", line)
        if m:
            out.append((int(m.group(1), 16), m.group(2), m.group(3)))
    return out


def kernel_step(frames):
    syms = " ".join(s for _, s, d in frames if "kernel" in d)
    user = next((s for _, s, d in frames if "kernel" not in d), "")
    if re.search(r"exc_page_fault|handle_mm_fault|do_anonymous_page|clear_page", syms):
        return "kernel: page faults (first touch of fresh memory)"
    if re.search(r"munmap|unmap|mmap|brk|madvise", syms + " " + user):
        return "kernel: mapping and unmapping memory"
    if re.search(r"futex|schedule|wake", syms):
        return "thread hand-offs (futex, scheduler)"
    if re.search(r"_read|read$|pread|copy_to_iter|filemap_read", syms + " " + user):
        return "kernel: reading files"
    if re.search(r"write|fsync|rename|link|unlink|mkdir|openat|statx|close", syms + " " + user):
        return "kernel: writing files, directories"
    return "kernel: other"


def classify(frames):
    """(step, libjpeg leaf address or None)."""
    if not frames:
        return "unknown", None
    leaf_ip, leaf_sym, leaf_dso = frames[0]
    if "kernel" in leaf_dso:
        return kernel_step(frames), None
    if "libjpeg" in leaf_dso:
        # a thumbnail's encode is the report's; otherwise decode or encode by address
        whole = " ".join(f"{s} {d}" for _, s, d in frames)
        if re.search(ENCODE, whole) and re.search(r"Batches.*(Report|Thumb|thumb)", whole):
            return "report: thumbnails, pages", None
        return None, leaf_ip
    text = [f"{s} {d}" for _, s, d in frames]
    in_line = any("OutputLine" in t for t in text)
    for i, t in enumerate(text):
        if "libjpeg" in t:
            continue
        for step, pattern in STEPS:
            if re.search(pattern, t):
                if step.startswith("resample") and in_line:
                    return "preview: Lanczos 1024 → 480", None
                return step, None
        if re.search(ENCODE, t):
            whole = " ".join(text)
            return ("report: thumbnails, pages" if re.search(REPORT, whole) else "JPEG encode (libjpeg-turbo)"), None
        if re.search(DECODE, t):
            return "JPEG decode (libjpeg-turbo)", None
        if "ld-linux" in t or "_dl_" in t:
            return "start-up (dynamic linking)", None
        if re.search(REPORT, t):
            return "report: thumbnails, pages", None
        if "libswift" in t or "swift_" in t:
            return "Swift runtime (retain/release, allocation, tasks)", None
        if "libc.so" in t and i == 0:
            continue  # memcpy, malloc: whoever called it
    if "libjpeg" in leaf_dso:
        return None, leaf_ip
    if "libc.so" in leaf_dso:
        return "libc (memcpy, malloc) elsewhere", None
    return "other", None


def addresses(path, step):
    return [(int(line, 16), step) for line in open(path) if line.strip()]


def main():
    photos = int(sys.argv[1])
    cpu = float(sys.argv[2])
    known = sorted(addresses(sys.argv[3], "JPEG decode (libjpeg-turbo)")
                   + addresses(sys.argv[4], "JPEG encode (libjpeg-turbo)"))
    counts = collections.Counter()
    unknown = []    # libjpeg leaf addresses
    block = []
    def flush():
        if not block:
            return
        step, ip = classify(frames_of(block))
        if step is None:
            unknown.append(ip)
        else:
            counts[step] += 1
        block.clear()
    for line in sys.stdin:
        if line.strip() == "":
            flush()
        else:
            block.append(line.rstrip("\n"))
    flush()
    at = [a for a, _ in known]
    for ip in unknown:
        i = bisect.bisect_left(at, ip)
        near = min((j for j in (i - 1, i) if 0 <= j < len(known)), key=lambda j: abs(at[j] - ip))
        counts[known[near][1]] += 1
    total = sum(counts.values())
    seconds = cpu
    print(f"| step | ms a photo | share |")
    print(f"|---|---:|---:|")
    for step, n in counts.most_common():
        print(f"| {step} | {seconds * 1000 * n / total / photos:.1f} | {100 * n / total:.1f} % |")
    print(f"| **all** | **{seconds * 1000 / photos:.1f}** | {total} samples |")


if __name__ == "__main__":
    main()
