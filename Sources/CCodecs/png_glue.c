/* libpng glue: see include/png_glue.h. Every function that calls libpng sets its own
   setjmp point; libpng's error callback copies the message and longjmps back here. */
#include "png_glue.h"
#include <png.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

#define PF_PNG_IDAT_READ_SIZE 1024

struct pf_png_reader {
    png_structp png;
    png_infop info;
    const uint8_t *data;
    size_t length, position;
    int status;
    char message[256];
    pf_png_header header;
    /* Decoding state. */
    int out_channels;   /* what the caller wants: 3 or 4 */
    int lib_channels;   /* what libpng delivers after transforms: 3 or 4 */
    uint32_t next_row;
    size_t lib_row_bytes;
    uint8_t *scratch;   /* one row, when compositing over white */
    uint8_t *whole;     /* the whole image, when interlaced */
    png_bytep *rows;    /* row pointers into `whole` */
    /* Damage (pf_png_damage). */
    int truncated;      /* the data ran out */
    int broken;         /* libpng failed while reading the pixels: the rows left are grey */
    int reading_image;  /* inside png_read_image (an interlaced file's pixels) */
    int damage_count;
    int damage_effect;  /* the worst PF_PNG_DAMAGE_* */
    int damage_row;     /* the first row affected, -1 when not known */
    char damage_message[256];
};

/* Keeps the first damage's words and row, the worst effect, the count. */
static void pf_png_record_damage(pf_png_reader *r, int effect, int row, const char *message) {
    if (r->damage_count == 0) {
        snprintf(r->damage_message, sizeof r->damage_message, "%s", message);
        r->damage_row = row;
    } else if (row >= 0 && (r->damage_row < 0 || row < r->damage_row)) {
        r->damage_row = row;
    }
    if (effect > r->damage_effect) r->damage_effect = effect;
    if (r->damage_count < 1 << 30) r->damage_count++;
}

/* The reader's error exit: libpng's words (or, once the data ran out, where it ended: what
   libpng then complains about is the zeros it was given), then back to the glue's jump point. */
static void pf_png_read_error_fn(png_structp png, png_const_charp msg) {
    pf_png_reader *r = (pf_png_reader *)png_get_error_ptr(png);
    if (r->truncated) snprintf(r->message, sizeof r->message, "data ends early at byte %zu", r->length);
    else snprintf(r->message, sizeof r->message, "%s", msg ? msg : "unknown libpng error");
    png_longjmp(png, 1);
}

/* The reader's warnings: a chunk whose CRC does not match is damage (libpng is told to use a
   critical chunk all the same and to leave an ancillary one out); the rest (odd profiles, extra
   compressed data after the pixels) does not change a pixel. */
static void pf_png_read_warning_fn(png_structp png, png_const_charp msg) {
    pf_png_reader *r = (pf_png_reader *)png_get_error_ptr(png);
    if (msg == NULL || r->truncated) return; /* past the end: the error that follows says it */
    size_t n = strlen(msg);
    static const char crc[] = "CRC error";
    if (n < sizeof crc - 1 || strcmp(msg + n - (sizeof crc - 1), crc) != 0) return;
    /* "IDAT: CRC error": a chunk name starting upper case is critical (IHDR, PLTE, IDAT). */
    int critical = msg[0] >= 'A' && msg[0] <= 'Z';
    pf_png_record_damage(r, critical ? PF_PNG_DAMAGE_WRONG : PF_PNG_DAMAGE_LEFT_OUT, -1, msg);
}

/* Error exit: keep libpng's words, jump back to the C function that called libpng. */
static void pf_png_error_fn(png_structp png, png_const_charp msg) {
    char *buffer = (char *)png_get_error_ptr(png);
    if (buffer) snprintf(buffer, 256, "%s", msg ? msg : "unknown libpng error");
    png_longjmp(png, 1);
}

/* Warnings (ancillary CRC errors, odd profiles) don't stop a photo. */
static void pf_png_warning_fn(png_structp png, png_const_charp msg) {
    (void)png; (void)msg;
}

/* Reads from memory; a read past the end fails (the reader remembers the data ran out). libpng
   reads IDAT data in blocks of PF_PNG_IDAT_READ_SIZE (set in pf_png_open), so the rows of a file
   cut short are delivered up to the last whole block before the cut. */
static void pf_png_read_fn(png_structp png, png_bytep out, png_size_t count) {
    pf_png_reader *r = (pf_png_reader *)png_get_io_ptr(png);
    if (count > r->length - r->position) {
        r->truncated = 1;
        png_error(png, "data ends early");
    }
    memcpy(out, r->data + r->position, count);
    r->position += count;
}

pf_png_reader *pf_png_open(const uint8_t *data, size_t length,
                           uint32_t max_width, uint32_t max_height) {
    pf_png_reader *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->data = data;
    r->length = length;
    r->status = PF_PNG_ERROR;
    r->damage_row = -1;
    r->png = png_create_read_struct(PNG_LIBPNG_VER_STRING, r, pf_png_read_error_fn, pf_png_read_warning_fn);
    if (!r->png) { r->status = PF_PNG_NOMEM; snprintf(r->message, 256, "out of memory"); return r; }
    r->info = png_create_info_struct(r->png);
    if (!r->info) { r->status = PF_PNG_NOMEM; snprintf(r->message, 256, "out of memory"); return r; }
    if (setjmp(png_jmpbuf(r->png))) {
        r->status = PF_PNG_ERROR;
        return r;
    }
    png_set_read_fn(r->png, r, pf_png_read_fn);
    png_set_user_limits(r->png, max_width, max_height);
    png_set_option(r->png, PNG_SKIP_sRGB_CHECK_PROFILE, PNG_OPTION_ON);
    /* A CRC that does not match is a warning (pf_png_read_warning_fn says it is damage): a
       critical chunk is used all the same, an ancillary one left out. */
    png_set_crc_action(r->png, PNG_CRC_WARN_USE, PNG_CRC_WARN_DISCARD);
    /* Compressed pixel data is read 1 KiB at a time (libpng's default is 8 KiB): a file cut
       short loses only the rows of its last KiB. The pixels are the same either way. */
    png_set_compression_buffer_size(r->png, PF_PNG_IDAT_READ_SIZE);
    png_read_info(r->png, r->info);

    pf_png_header *h = &r->header;
    h->width = png_get_image_width(r->png, r->info);
    h->height = png_get_image_height(r->png, r->info);
    h->color_type = png_get_color_type(r->png, r->info);
    h->bit_depth = png_get_bit_depth(r->png, r->info);
    h->interlaced = png_get_interlace_type(r->png, r->info) != PNG_INTERLACE_NONE;
    h->has_alpha = (h->color_type & PNG_COLOR_MASK_ALPHA) != 0
        || png_get_valid(r->png, r->info, PNG_INFO_tRNS) != 0;

    png_charp name = NULL;
    int compression = 0;
    png_bytep profile = NULL;
    png_uint_32 profile_length = 0;
    if (png_get_iCCP(r->png, r->info, &name, &compression, &profile, &profile_length)
        && profile && profile_length > 0) {
        h->icc = profile;
        h->icc_length = profile_length;
    }
    png_bytep exif = NULL;
    png_uint_32 exif_length = 0;
    if (png_get_eXIf_1(r->png, r->info, &exif_length, &exif) && exif && exif_length > 0) {
        h->exif = exif;
        h->exif_length = exif_length;
    }
    /* XMP: the text chunk keyed "XML:com.adobe.xmp" (iTXt by the spec, any kind accepted). */
    png_textp texts = NULL;
    int text_count = png_get_text(r->png, r->info, &texts, NULL);
    for (int i = 0; i < text_count && texts; i++) {
        if (texts[i].key && strcmp(texts[i].key, "XML:com.adobe.xmp") == 0 && texts[i].text) {
            size_t length = texts[i].compression >= PNG_ITXT_COMPRESSION_NONE ? texts[i].itxt_length
                                                                            : texts[i].text_length;
            if (length > 0) {
                h->xmp = (const uint8_t *)texts[i].text;
                h->xmp_length = length;
            }
            break;
        }
    }
    r->status = PF_PNG_OK;
    return r;
}

int pf_png_status(const pf_png_reader *r) { return r->status; }
const pf_png_header *pf_png_get_header(const pf_png_reader *r) { return &r->header; }
const char *pf_png_message(const pf_png_reader *r) { return r->message; }

/* Libpng failed while reading the pixels from `row` on (-1: an interlaced file, where is not
   known): the rest of the picture is missing. */
static void pf_png_broke(pf_png_reader *r, int row) {
    pf_png_record_damage(r, PF_PNG_DAMAGE_MISSING, row, r->message);
    r->broken = 1;
    r->reading_image = 0;
}

int pf_png_start(pf_png_reader *r, int channels) {
    if (r->status != PF_PNG_OK) return r->status;
    if (setjmp(png_jmpbuf(r->png))) {
        if (r->reading_image) {
            /* The pixels read so far stay in `whole`, the rest is grey. */
            pf_png_broke(r, -1);
            r->next_row = 0;
            return PF_PNG_OK;
        }
        r->status = PF_PNG_ERROR;
        return r->status;
    }
    png_structp png = r->png;
    const pf_png_header *h = &r->header;
    r->out_channels = channels;
    png_set_expand(png);          /* palette -> RGB, grey < 8 -> 8, tRNS -> alpha */
    png_set_strip_16(png);
    png_set_gray_to_rgb(png);
    if (channels == 4 && !h->has_alpha)
        png_set_filler(png, 0xff, PNG_FILLER_AFTER);
    int passes = png_set_interlace_handling(png);
    png_read_update_info(png, r->info);
    r->lib_channels = png_get_channels(png, r->info);
    r->lib_row_bytes = png_get_rowbytes(png, r->info);
    if (r->lib_channels != 3 && r->lib_channels != 4) {
        snprintf(r->message, 256, "unexpected PNG layout: %d channels after expansion", r->lib_channels);
        r->status = PF_PNG_ERROR;
        return r->status;
    }
    if (r->lib_channels != channels) {
        r->scratch = malloc(r->lib_row_bytes);
        if (!r->scratch) goto nomem;
    }
    if (passes > 1) {
        /* Adam7 spreads every row over seven passes: decode the whole image first. The
           size comes from the header: a product that overflows is refused, not wrapped. */
        size_t whole_bytes;
        if (__builtin_mul_overflow(r->lib_row_bytes, (size_t)h->height, &whole_bytes)) goto nomem;
        r->whole = malloc(whole_bytes);
        r->rows = malloc(sizeof(png_bytep) * (size_t)h->height);
        if (!r->whole || !r->rows) goto nomem;
        for (uint32_t y = 0; y < h->height; y++) r->rows[y] = r->whole + r->lib_row_bytes * y;
        memset(r->whole, 128, whole_bytes); /* grey where a damaged file leaves pixels out */
        if (r->lib_channels == 4)
            for (uint32_t y = 0; y < h->height; y++)
                for (uint32_t x = 0; x < h->width; x++) r->rows[y][4 * x + 3] = 255;
        r->reading_image = 1;
        png_read_image(png, r->rows);
        r->reading_image = 0;
    }
    r->next_row = 0;
    return PF_PNG_OK;
nomem:
    snprintf(r->message, 256, "out of memory for a %u×%u PNG", h->width, h->height);
    r->status = PF_PNG_NOMEM;
    return r->status;
}

/* RGBA over white, straight alpha, rounded. */
static void pf_composite_over_white(const uint8_t *in, uint8_t *out, uint32_t width) {
    for (uint32_t x = 0; x < width; x++) {
        unsigned a = in[4 * x + 3], inv = 255 - a;
        for (int c = 0; c < 3; c++)
            out[3 * x + c] = (uint8_t)((in[4 * x + c] * a + 255 * inv + 127) / 255);
    }
}

int pf_png_next_row(pf_png_reader *r, uint8_t *out) {
    if (r->status != PF_PNG_OK) return r->status;
    if (r->next_row >= r->header.height) {
        snprintf(r->message, 256, "no more rows");
        return PF_PNG_ERROR;
    }
    uint8_t *target = r->scratch ? r->scratch : out;
    if (setjmp(png_jmpbuf(r->png))) {
        /* This row and those after it are missing: libpng cannot go on. */
        pf_png_broke(r, (int)r->next_row);
        target = r->scratch ? r->scratch : out;
    }
    if (r->whole) {
        memcpy(target, r->rows[r->next_row], r->lib_row_bytes);
    } else if (r->broken) {
        memset(target, 128, r->lib_row_bytes);
        if (r->lib_channels == 4)
            for (uint32_t x = 0; x < r->header.width; x++) target[4 * x + 3] = 255;
    } else {
        png_read_row(r->png, target, NULL);
    }
    if (r->scratch) pf_composite_over_white(r->scratch, out, r->header.width);
    r->next_row++;
    return PF_PNG_OK;
}

int pf_png_damage(const pf_png_reader *r, int *effect, int *row, const char **message) {
    *effect = r->damage_effect;
    *row = r->damage_row;
    *message = r->damage_message;
    return r->damage_count;
}

void pf_png_close(pf_png_reader *r) {
    if (!r) return;
    if (r->png) png_destroy_read_struct(&r->png, r->info ? &r->info : NULL, NULL);
    free(r->scratch);
    free(r->whole);
    free(r->rows);
    free(r);
}

/* --- Writing ---------------------------------------------------------------- */

typedef struct {
    uint8_t *bytes;
    size_t length, capacity;
} pf_png_sink;

static void pf_png_write_fn(png_structp png, png_bytep data, png_size_t count) {
    pf_png_sink *sink = (pf_png_sink *)png_get_io_ptr(png);
    if (sink->length + count > sink->capacity) {
        size_t capacity = sink->capacity ? sink->capacity : 65536;
        while (capacity < sink->length + count) capacity *= 2;
        uint8_t *grown = realloc(sink->bytes, capacity);
        if (!grown) png_error(png, "out of memory while writing PNG");
        sink->bytes = grown;
        sink->capacity = capacity;
    }
    memcpy(sink->bytes + sink->length, data, count);
    sink->length += count;
}

static void pf_png_flush_fn(png_structp png) { (void)png; }

struct pf_png_writer {
    png_structp png;
    png_infop info;
    pf_png_sink sink;
    uint32_t height;
    uint32_t rows_written;  /* over every interlace pass */
    int passes;
    int failed;
    char *xmp_text;         /* a NUL-terminated copy of the XMP packet, freed with the writer */
    char message[256];
};

int pf_png_writer_start(pf_png_writer **out, uint32_t width, uint32_t height,
                        int color_type, int bit_depth, int interlaced,
                        const uint8_t *palette, int palette_count,
                        const uint8_t *trns, int trns_count,
                        const uint8_t *icc, size_t icc_length,
                        const uint8_t *exif, size_t exif_length,
                        const uint8_t *xmp, size_t xmp_length,
                        int compression_level, int filters) {
    pf_png_writer *w = calloc(1, sizeof *w);
    *out = w;
    if (!w) return PF_PNG_NOMEM;
    w->height = height;
    w->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, w->message, pf_png_error_fn, pf_png_warning_fn);
    w->info = w->png ? png_create_info_struct(w->png) : NULL;
    if (!w->png || !w->info) {
        snprintf(w->message, sizeof w->message, "out of memory");
        w->failed = 1;
        return PF_PNG_NOMEM;
    }
    if (setjmp(png_jmpbuf(w->png))) { w->failed = 1; return PF_PNG_ERROR; }
    png_set_write_fn(w->png, &w->sink, pf_png_write_fn, pf_png_flush_fn);
    /* The old HP/Microsoft "sRGB IEC61966-2.1" profile (in many cameras' photos) is on
       libpng's list of known incorrect sRGB profiles, and a write struct treats that as an
       error: the photo would fail. Kept as the photo carries it, as every reader does. */
    png_set_option(w->png, PNG_SKIP_sRGB_CHECK_PROFILE, PNG_OPTION_ON);
    png_set_IHDR(w->png, w->info, width, height, bit_depth, color_type,
                 interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_BASE, PNG_FILTER_TYPE_BASE);
    png_set_compression_level(w->png, compression_level);
    png_set_filter(w->png, PNG_FILTER_TYPE_BASE, filters);
    if (palette && palette_count > 0) {
        png_color colors[256];
        int n = palette_count > 256 ? 256 : palette_count;
        for (int i = 0; i < n; i++) {
            colors[i].red = palette[3 * i];
            colors[i].green = palette[3 * i + 1];
            colors[i].blue = palette[3 * i + 2];
        }
        png_set_PLTE(w->png, w->info, colors, n);
    }
    if (trns && trns_count > 0)
        png_set_tRNS(w->png, w->info, trns, trns_count, NULL);
    if (icc && icc_length > 0)
        png_set_iCCP(w->png, w->info, "ICC profile", PNG_COMPRESSION_TYPE_BASE, icc, (png_uint_32)icc_length);
    if (exif && exif_length > 0)
        png_set_eXIf_1(w->png, w->info, (png_uint_32)exif_length, (png_bytep)exif);
    /* XMP as an uncompressed iTXt chunk before the image data (XMP spec part 3). libpng
       copies the text; our NUL-terminated copy is the writer's (freed with it, even after
       a longjmp). */
    if (xmp && xmp_length > 0) {
        w->xmp_text = malloc(xmp_length + 1);
        if (!w->xmp_text) png_error(w->png, "out of memory");
        memcpy(w->xmp_text, xmp, xmp_length);
        w->xmp_text[xmp_length] = '\0';
        png_text entry;
        memset(&entry, 0, sizeof entry);
        entry.compression = PNG_ITXT_COMPRESSION_NONE;
        entry.key = "XML:com.adobe.xmp";
        entry.text = w->xmp_text;
        entry.itxt_length = xmp_length;
        entry.lang = "";
        entry.lang_key = "";
        png_set_text(w->png, w->info, &entry, 1);
    }
    png_write_info(w->png, w->info);
    w->passes = png_set_interlace_handling(w->png);
    return PF_PNG_OK;
}

int pf_png_writer_passes(const pf_png_writer *w) { return w->passes; }

int pf_png_writer_write(pf_png_writer *w, const uint8_t *rows, size_t stride, uint32_t count) {
    if (!w || w->failed) return PF_PNG_ERROR;
    if (count > (uint32_t)w->passes * w->height - w->rows_written) {
        snprintf(w->message, sizeof w->message, "more PNG rows than the image has");
        w->failed = 1;
        return PF_PNG_ERROR;
    }
    if (setjmp(png_jmpbuf(w->png))) { w->failed = 1; return PF_PNG_ERROR; }
    for (uint32_t i = 0; i < count; i++) png_write_row(w->png, rows + stride * i);
    w->rows_written += count;
    return PF_PNG_OK;
}

int pf_png_writer_finish(pf_png_writer *w, const uint8_t **out, size_t *out_length) {
    *out = NULL;
    *out_length = 0;
    if (!w || w->failed) return PF_PNG_ERROR;
    if (w->rows_written != (uint32_t)w->passes * w->height) {
        snprintf(w->message, sizeof w->message, "PNG finished after %u of %u rows",
                 w->rows_written, (uint32_t)w->passes * w->height);
        w->failed = 1;
        return PF_PNG_ERROR;
    }
    if (setjmp(png_jmpbuf(w->png))) { w->failed = 1; return PF_PNG_ERROR; }
    png_write_end(w->png, w->info);
    *out = w->sink.bytes;
    *out_length = w->sink.length;
    return PF_PNG_OK;
}

const char *pf_png_writer_message(const pf_png_writer *w) { return w ? w->message : "out of memory"; }

void pf_png_writer_destroy(pf_png_writer *w) {
    if (!w) return;
    if (w->png) png_destroy_write_struct(&w->png, w->info ? &w->info : NULL);
    free(w->sink.bytes);
    free(w->xmp_text);
    free(w);
}
