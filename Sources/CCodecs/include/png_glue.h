#pragma once
/* libpng behind a wall: every function sets its own setjmp point, so libpng's longjmp
   error exit never crosses a Swift frame. Failures return a negative status and leave
   libpng's message in the reader/writer (pf_png_message). */
#include <stddef.h>
#include <stdint.h>

/* An open PNG being read from memory. Opaque; one owner, freed by pf_png_close. */
typedef struct pf_png_reader pf_png_reader;

/* What IHDR and the chunks before the image data say. Pointers stay valid until
   pf_png_close. */
typedef struct pf_png_header {
    uint32_t width, height;
    int color_type;     /* PNG_COLOR_TYPE_* */
    int bit_depth;      /* 1, 2, 4, 8, 16 */
    int interlaced;     /* 1 when Adam7 */
    int has_alpha;      /* alpha channel or tRNS */
    const uint8_t *icc; size_t icc_length;
    const uint8_t *exif; size_t exif_length;
    const uint8_t *xmp; size_t xmp_length;   /* the "XML:com.adobe.xmp" text chunk */
} pf_png_header;

/* Status codes. */
enum { PF_PNG_OK = 0, PF_PNG_ERROR = -1, PF_PNG_NOMEM = -2 };

/* How damaged data hurts the picture, worst last (pf_png_damage). */
enum {
    PF_PNG_DAMAGE_NONE = 0,
    PF_PNG_DAMAGE_LEFT_OUT = 1, /* an ancillary chunk failed its CRC and was left out */
    PF_PNG_DAMAGE_WRONG = 3,    /* a critical chunk failed its CRC: its data was used all the same */
    PF_PNG_DAMAGE_MISSING = 4   /* the data ends early or breaks: the rest of the rows are grey */
};

/* Opens `data` (not copied: it must outlive the reader) and reads the header. libpng
   refuses widths/heights over the user limits by itself. Returns NULL only when out of
   memory; otherwise check pf_png_status / pf_png_message. */
pf_png_reader *pf_png_open(const uint8_t *data, size_t length,
                           uint32_t max_width, uint32_t max_height);
/* PF_PNG_OK once the header was read, else an error status. */
int pf_png_status(const pf_png_reader *reader);
/* The header (valid when pf_png_status is PF_PNG_OK). */
const pf_png_header *pf_png_get_header(const pf_png_reader *reader);
/* libpng's last error message ("" when none). */
const char *pf_png_message(const pf_png_reader *reader);

/* Sets up 8-bit RGB (channels 3) or RGBA (channels 4) output: palette and low-depth grey
   expanded, tRNS to alpha, 16 bits stripped, grey to RGB. Asking 3 channels from an image
   with alpha composites over white. Interlaced images are decoded whole into an internal
   buffer here (the rows come from it; where a damaged file stops, grey). Call once. */
int pf_png_start(pf_png_reader *reader, int channels);
/* Writes the next row (width * channels bytes) into `out`. Once libpng fails on the pixels
   (the data ends early, zlib finds it broken) that row and the rest are grey, the failure is
   damage (pf_png_damage) and the status stays OK: the caller decides. */
int pf_png_next_row(pf_png_reader *reader, uint8_t *out);
/* Damage found so far (a CRC that does not match, pixels libpng could not read): how many;
   `effect` is the worst PF_PNG_DAMAGE_*, `row` the first row affected (-1: not known),
   `message` the first in words (owned by the reader). */
int pf_png_damage(const pf_png_reader *reader, int *effect, int *row, const char **message);
/* Frees everything. Safe with NULL. */
void pf_png_close(pf_png_reader *reader);

/* A PNG being written row by row, in memory. Opaque; one owner, freed by
   pf_png_writer_destroy. Every call sets its own setjmp point. */
typedef struct pf_png_writer pf_png_writer;

/* Starts a PNG: IHDR and the chunks before the image data. Rows are in the layout
   color_type/bit_depth call for (16-bit samples big-endian). `palette` holds `palette_count`
   RGB triples and `trns` `trns_count` alpha values (both may be NULL/0); `icc`/`exif`/`xmp` (written as
   the iTXt chunk "XML:com.adobe.xmp") may be NULL. `*out` is set even on failure (NULL only when out of memory): read the reason with
   pf_png_writer_message, then destroy it. */
int pf_png_writer_start(pf_png_writer **out, uint32_t width, uint32_t height,
                        int color_type, int bit_depth, int interlaced,
                        const uint8_t *palette, int palette_count,
                        const uint8_t *trns, int trns_count,
                        const uint8_t *icc, size_t icc_length,
                        const uint8_t *exif, size_t exif_length,
                        const uint8_t *xmp, size_t xmp_length,
                        int compression_level, int filters);
/* How many times every row is to be written (7 when interlaced, else 1), all rows per pass. */
int pf_png_writer_passes(const pf_png_writer *writer);
/* Writes the next `count` rows (`stride` bytes apart). */
int pf_png_writer_write(pf_png_writer *writer, const uint8_t *rows, size_t stride, uint32_t count);
/* Ends the file once every row is written; `*out` (valid until destroy) holds the file. */
int pf_png_writer_finish(pf_png_writer *writer, const uint8_t **out, size_t *out_length);
/* libpng's reason for the last failure. */
const char *pf_png_writer_message(const pf_png_writer *writer);
/* Frees the writer and its file. Safe with NULL. */
void pf_png_writer_destroy(pf_png_writer *writer);
