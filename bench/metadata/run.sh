#!/bin/sh
# What a metadata template with a codes file costs a photo (reference: Metadata templates).
#  1. Its own work, apart from any photo: bench/metadata/main.swift built with the codes file and
#     the variables (swiftc -O): reading a roster of LINES lines, and filling one photo's texts.
#  2. The whole photo, through the release binary (PF, default .build/release/photofinish):
#     PHOTOS small JPEGs finished with the template and its LINES-line roster (A) and with the
#     same template without metadata (B), side by side with farm-bench; (A − B) / PHOTOS is what
#     the metadata costs a photo, writing its IPTC and XMP included.
# Usage: bench/metadata/run.sh [LINES] [PHOTOS]   (needs ImageMagick's convert and farm-bench for 2)
set -e
cd "$(dirname "$0")/../.."
lines=${1:-2000}
photos=${2:-300}
tmp=${TMPDIR:-/tmp}/pf-metadata-bench
pf=${PF:-.build/release/photofinish}
mkdir -p "$tmp"
echo "$(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M UTC')"
swiftc -O -wmo -module-name MetadataBench Sources/Finishing/Template/CodeReplacements.swift \
    Sources/Finishing/Template/Variables.swift bench/metadata/main.swift -o "$tmp/bench"
"$tmp/bench" "$lines" 20000

command -v farm-bench >/dev/null && command -v convert >/dev/null && [ -x "$pf" ] || {
    echo "(the whole photo is not measured: it needs farm-bench, ImageMagick's convert and $pf)"; exit 0; }
rm -rf "$tmp/in" "$tmp/out-a" "$tmp/out-b"; mkdir -p "$tmp/in"
convert -size 64x48 plasma:green-blue "$tmp/in/p.jpg"
i=1; while [ "$i" -le "$photos" ]; do cp "$tmp/in/p.jpg" "$tmp/in/IMG_$i.jpg"; i=$((i + 1)); done
rm "$tmp/in/p.jpg"
{ echo "// a roster"; i=0; while [ "$i" -lt "$lines" ]; do printf 'P%d\tPlayer Number %d Lovelace-Öhman\tÖhman %d\n' "$i" "$i" "$i"; i=$((i + 1)); done; } > "$tmp/roster.tsv"
cat > "$tmp/a.json5" <<'T'
{ version: 1, output: { format: "jpeg", quality: 85 },
  metadata: { title: "Choo-Choos vs Dunkers — {date}", caption: "=P7= passes to =P1999#2= as =P1000= looks on, {index} of {count}",
              keywords: ["basketball", "=P7#2=", "=P1999#2=", "=P1000#2="], creator: "=P12=", copyright: "© {year} Sports Desk",
              usageTerms: "Editorial use only", event: "Cup Final", codes: "roster.tsv" } }
T
echo '{ version: 1, output: { format: "jpeg", quality: 85 } }' > "$tmp/b.json5"
"$pf" run --template "$tmp/a.json5" --out "$tmp/out-a" "$tmp/in" >/dev/null
farm-bench -n 9 --timeout 900 --vs "sh -c 'rm -rf $tmp/out-b; exec $pf run --template $tmp/b.json5 --workers 1 --out $tmp/out-b $tmp/in'" \
    -- sh -c "rm -rf $tmp/out-a; exec $pf run --template $tmp/a.json5 --workers 1 --out $tmp/out-a $tmp/in"
echo "load $(cut -d' ' -f1-3 /proc/loadavg); (A − B) / $photos photos = what the metadata template costs a photo"
