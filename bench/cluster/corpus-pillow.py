#!/usr/bin/env python3
# A stand-in for bench/make-corpus.sh's jpeg12/ where libvips is not installed (numpy, Pillow):
# 20 x 4032x3024 JPEG q90 (~4 MB each), textured coloured noise from fixed seeds, the odd
# numbers with EXIF Orientation=6. Not the same bytes as make-corpus.sh: figures made with it
# say so. Usage: bench/cluster/corpus-pillow.py   (writes /tmp/pf-bench/corpus/jpeg12)
import os
import numpy as np
from PIL import Image
W, H = 4032, 3024
os.makedirs("/tmp/pf-bench/corpus/jpeg12", exist_ok=True)
for i in range(1, 21):
    rng = np.random.default_rng(i)
    small = rng.random((H // 64 + 1, W // 64 + 1, 3)).astype(np.float32)
    base = np.array(Image.fromarray((small * 255).astype(np.uint8)).resize((W, H), Image.BICUBIC), dtype=np.float32)
    mid = rng.random((H // 8 + 1, W // 8 + 1)).astype(np.float32)
    midi = np.array(Image.fromarray((mid * 255).astype(np.uint8)).resize((W, H), Image.BILINEAR), dtype=np.float32)
    img = base * 0.7 + midi[..., None] * 0.25 + rng.normal(0, 6, (H, W, 1)).astype(np.float32)
    im = Image.fromarray(np.clip(img, 0, 255).astype(np.uint8))
    exif = Image.Exif()
    exif[0x0112] = 6 if i % 2 else 1
    im.save(f"/tmp/pf-bench/corpus/jpeg12/img{i:02d}.jpg", quality=90, exif=exif.tobytes())
    print(i, flush=True)
