#pragma once
/* JPEG through the libjpeg API, with libjpeg's longjmp error exits caught here in C.
   Every function that calls libjpeg sets its own jump point and returns a status code,
   so no longjmp ever crosses a Swift frame. libjpeg types stay out of this header. */
#include <stddef.h>
#include <stdint.h>

/* Status codes returned by every call below. */
enum {
    PF_JPEG_OK = 0,
    PF_JPEG_CORRUPT = 1,     /* libjpeg reported an error; message in pf_jpeg_decoder_message */
    PF_JPEG_EOF = 2,         /* the data ends early inside a marker segment; offset in pf_jpeg_decoder_eof_offset */
    PF_JPEG_TOO_MANY_SCANS = 3, /* a progressive file with more scans than the cap */
    PF_JPEG_STOPPED = 4,     /* the deadline passed or a stop was requested */
    PF_JPEG_NO_MEMORY = 5,   /* malloc failed in the glue */
    PF_JPEG_BAD_STATE = 6,   /* a call out of order (a programmer's mistake) */
    PF_JPEG_TOO_LARGE = 7    /* the header's size is over what libjpeg decodes (65500 a side) */
};

/* How damaged data hurts the picture, worst last (pf_jpeg_decoder_damage). */
enum {
    PF_JPEG_DAMAGE_NONE = 0,
    PF_JPEG_DAMAGE_BLURRED = 2,  /* a progressive file's later scans are missing */
    PF_JPEG_DAMAGE_WRONG = 3,    /* corrupt data: the pixels may be wrong */
    PF_JPEG_DAMAGE_MISSING = 4   /* the data ends early: libjpeg fills the rest grey */
};

/* The most scans a progressive file may have (what libjpeg-turbo's fuzzers use). */
#define PF_JPEG_MAX_SCANS 500

typedef struct pf_jpeg_decoder pf_jpeg_decoder;

/* Creates a decoder; NULL when out of memory. */
pf_jpeg_decoder *pf_jpeg_decoder_create(void);
/* Frees everything the decoder owns. Safe on NULL. */
void pf_jpeg_decoder_destroy(pf_jpeg_decoder *d);

/* Reads the header from the caller's bytes, saving the EXIF (APP1) and ICC (APP2) markers.
   The bytes are read in place, not copied: the caller keeps them, unchanged, as long as the
   decoder, and gives their address again with pf_jpeg_decoder_rebase before every later call
   that reads the file (start, read_rows, finish, start_planes, read_planes), in case they
   moved. A file that does not end in an EOI marker is copied once, with an EOI appended
   (then rebase does nothing): a single-scan file missing only its EOI then decodes, while
   missing image data or a multi-scan file stopping at the added EOI is damage
   (pf_jpeg_decoder_damage), and a cut inside a marker segment is PF_JPEG_EOF. */
int pf_jpeg_decoder_read_header(pf_jpeg_decoder *d, const uint8_t *data, size_t size);
/* Where the caller's bytes are now (the same bytes read_header was given). */
void pf_jpeg_decoder_rebase(pf_jpeg_decoder *d, const uint8_t *data);

/* Header facts, valid after a successful read_header. */
int pf_jpeg_decoder_width(const pf_jpeg_decoder *d);
int pf_jpeg_decoder_height(const pf_jpeg_decoder *d);
int pf_jpeg_decoder_components(const pf_jpeg_decoder *d);
int pf_jpeg_decoder_is_progressive(const pf_jpeg_decoder *d);
/* The EXIF block after "Exif\0\0" (TIFF header onwards), or NULL. */
const uint8_t *pf_jpeg_decoder_exif(const pf_jpeg_decoder *d, size_t *size);
/* The `index`th marker saved with the header (APP1, APP2, APP13, in file order): its
   code (0xE0 + n) and payload, or NULL past the last. Valid only between read_header and
   the first start (the marker memory belongs to libjpeg's image pool): copy it at once. */
const uint8_t *pf_jpeg_decoder_marker(const pf_jpeg_decoder *d, int index, int *code, size_t *size);
/* The ICC profile (reassembled from its APP2 chunks), or NULL. */
const uint8_t *pf_jpeg_decoder_icc(const pf_jpeg_decoder *d, size_t *size);

/* Stops the decode with PF_JPEG_STOPPED once `nanoseconds` (CLOCK_MONOTONIC) have
   passed from now; a negative value means no deadline. Checked in libjpeg's progress
   monitor, i.e. inside long scans too. */
void pf_jpeg_decoder_set_timeout(pf_jpeg_decoder *d, int64_t nanoseconds);
/* Asks a running decode to stop (any thread). */
void pf_jpeg_decoder_request_stop(pf_jpeg_decoder *d);

/* The builds of the scaled IDCTs (pf_jpeg_decoder_start's `simd`): both give the same bytes. */
enum { PF_JPEG_SIMD_SSE2 = 1, PF_JPEG_SIMD_AVX2 = 2 };

/* Starts decompression at scale eighths/8 (1–8: each side ⌈side · eighths / 8⌉ samples) into
   `channels` (3 = RGB, 4 = RGBA with alpha 255) whatever the source colour space (grey, YCbCr,
   CMYK, YCCK). At 3/8, 5/8, 6/8 and 7/8 the blocks go through our own IDCTs, built for `simd`
   (AVX2 only where the CPU has it); at 1/8, 1/4, 1/2 and 1/1 through libjpeg-turbo's. Can be
   called again after a finished or failed decode: the header is read again. Progressive
   files are read in full here (that is where the scan cap and deadline matter most). */
int pf_jpeg_decoder_start(pf_jpeg_decoder *d, int eighths, int channels, int simd,
                          int *out_width, int *out_height);
/* Reads up to `max_rows` rows into `buffer` (rows `stride` bytes apart); `rows_read`
   says how many came (0 only at the end). */
int pf_jpeg_decoder_read_rows(pf_jpeg_decoder *d, uint8_t *buffer, size_t stride,
                              int max_rows, int *rows_read);
/* Planes: a 3-component YCbCr file whose chroma is halved across (and maybe down) can be
   read as libjpeg stores it, without upsampling or colour conversion (raw data), at full
   scale: 1.5 or 2 bytes a pixel instead of RGB's 3. Returns the luma rows per chroma row
   (2 for 4:2:0, 1 for 4:2:2), or 0 when the file cannot be read so. After read_header. */
int pf_jpeg_decoder_planar_rows(const pf_jpeg_decoder *d);
/* Starts a decode of the planes (only when planar_rows is not 0): rows of each plane are
   `luma_stride` / `chroma_stride` bytes (the padded widths libjpeg writes). */
int pf_jpeg_decoder_start_planes(pf_jpeg_decoder *d, int *luma_stride, int *chroma_stride);
/* Reads the next 8 · planar_rows luma rows and 8 rows of each chroma plane (the last call
   may write padding rows past the image) into `y`, `cb`, `cr` (room for that many rows
   at the strides above); `rows_read` is the luma rows written, 0 at the end. */
int pf_jpeg_decoder_read_planes(pf_jpeg_decoder *d, uint8_t *y, uint8_t *cb, uint8_t *cr, int *rows_read);
/* Finishes the decode (reads to EOI: a truncated tail is still reported). */
int pf_jpeg_decoder_finish(pf_jpeg_decoder *d);

/* The last error in words ("" when none). Owned by the decoder. */
const char *pf_jpeg_decoder_message(const pf_jpeg_decoder *d);
/* How far the source got when the data ended early (bytes from the start). */
size_t pf_jpeg_decoder_eof_offset(const pf_jpeg_decoder *d);
/* Notes: libjpeg's warnings that are not about the pixels (a header's: a bad ICC chunk, an odd
   JFIF version; padding before the end marker), in words, in the order emitted (capped). */
int pf_jpeg_decoder_warning_count(const pf_jpeg_decoder *d);
const char *pf_jpeg_decoder_warning(const pf_jpeg_decoder *d, int index);
/* Notes emitted beyond the cap (counted, not kept). */
int pf_jpeg_decoder_warnings_dropped(const pf_jpeg_decoder *d);
/* Damage since the current decode started: libjpeg's warnings while the pixels are read
   (corrupt data, a premature end, extraneous bytes, a bad Huffman code…; libjpeg goes on, grey
   where data is missing) and a multi-scan file that stops at the EOI this glue added. Returns
   how many; `effect` is the worst PF_JPEG_DAMAGE_*, `row` the first full-size row affected,
   `message` the first one in words (owned by the decoder). */
int pf_jpeg_decoder_damage(const pf_jpeg_decoder *d, int *effect, int *row, const char **message);

/* A JPEG being written row by row (baseline or progressive, 4:2:0 chroma), so a finished
   photo never needs to be whole in memory. Each call sets its own jump point. */
typedef struct pf_jpeg_encoder pf_jpeg_encoder;

/* A marker to write as it is: code 0xE0 + n, payload of at most 65533 bytes. */
typedef struct pf_jpeg_marker {
    int code;
    const uint8_t *data;
    size_t size;
} pf_jpeg_marker;

/* Starts a JPEG of `width` x `height` from rows of `channels` bytes a pixel (3 = RGB, 4 = RGB
   and an ignored fourth byte), writing an EXIF APP1 (given without the "Exif\0\0" prefix)
   an ICC profile and `markers` (XMP in APP1 after the EXIF, IPTC in APP13 after the
   profile) before the scanlines. The file is written into `buffer` (kept by the
   caller, reused between photos) while it fits, else into a buffer libjpeg grows. `*out`
   is set even on failure (NULL only when out of memory): read the reason with
   pf_jpeg_encoder_message, then destroy it. */
int pf_jpeg_encoder_start(pf_jpeg_encoder **out, int width, int height, int channels,
                          int quality, int progressive, int optimize_coding,
                          const uint8_t *icc, size_t icc_size,
                          const uint8_t *exif, size_t exif_size,
                          const pf_jpeg_marker *markers, int marker_count,
                          uint8_t *buffer, size_t buffer_size);
/* Writes the next `count` rows (`stride` bytes apart). */
int pf_jpeg_encoder_write(pf_jpeg_encoder *e, const uint8_t *rows, size_t stride, int count);
/* Ends the file once every row is written. `*out` points at the file's bytes (valid until
   destroy); `*owned` is 1 when they are not in the caller's buffer (libjpeg outgrew it). */
int pf_jpeg_encoder_finish(pf_jpeg_encoder *e, const uint8_t **out, size_t *out_size, int *owned);
/* Why the last call failed. */
const char *pf_jpeg_encoder_message(const pf_jpeg_encoder *e);
/* Frees the encoder (and a buffer libjpeg grew). Safe on NULL. */
void pf_jpeg_encoder_destroy(pf_jpeg_encoder *e);
