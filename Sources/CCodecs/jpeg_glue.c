/* JPEG through the libjpeg API. libjpeg reports errors by longjmp from deep inside its
   calls; every function here that calls libjpeg sets its own jump point first, so the
   jump lands in this file and the caller (Swift) only ever sees a status code. */
#include "jpeg_glue.h"

#include <setjmp.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
/* libjpeg's internals: its table of IDCT methods (jpegint.h, in libjpeg62-turbo-dev), where the
   scaled decode puts its own (jpeg_idct.h). */
#define JPEG_INTERNALS
#include <jpeglib.h>
#include <jerror.h>

#include "jpeg_idct.h"

#define PF_MAX_WARNINGS 32

typedef struct pf_error_mgr {
    struct jpeg_error_mgr pub;   /* first: libjpeg sees only this part */
    jmp_buf jump;
    int status;                  /* the status the jump reports */
    char message[JMSG_LENGTH_MAX + 64];
    struct pf_jpeg_decoder *decoder; /* NULL while encoding */
} pf_error_mgr;

enum { ST_EMPTY, ST_HEADER, ST_STARTED, ST_DONE, ST_FAILED };

struct pf_jpeg_decoder {
    /* Each component's weights at the current scale (ours, malloc), first: what
       pf_idct_table_for reads through libjpeg's client_data. */
    pf_idct_table *idct[PF_IDCT_COMPONENTS];
    struct jpeg_decompress_struct cinfo;
    pf_error_mgr err;
    struct jpeg_progress_mgr progress;
    int created;
    int state;

    const uint8_t *data;         /* the file, read in place: the caller's bytes (pf_jpeg_decoder_rebase
                                    before each call that reads them) or, with an EOI added, our copy */
    uint8_t *copy;               /* that copy (malloc, ours), NULL while the caller's bytes are read */
    size_t size;                 /* the file's size (what messages talk about) */
    size_t source_size;          /* what libjpeg reads: size, or size + 2 with an EOI added */
    int eoi_added;
    uint8_t *exif;
    size_t exif_size;
    JOCTET *icc;                 /* from jpeg_read_icc_profile (malloc) */
    unsigned int icc_size;

    int channels;
    int simd;                    /* the build of our scaled IDCTs (PF_JPEG_SIMD_*) */
    int cmyk;                    /* decoding CMYK, converting to RGB here */
    int adobe_inverted;          /* Adobe CMYK stores inverted ink values */
    uint8_t *scratch;            /* one CMYK row */
    size_t scratch_size;

    int64_t deadline_ns;         /* CLOCK_MONOTONIC, or -1 */
    atomic_int stop;
    size_t eof_offset;

    char *warnings[PF_MAX_WARNINGS];
    int warning_count;
    int warnings_dropped;

    /* Damage found since the decode started (warnings while the pixels are read). */
    int decoding;                /* 0 while a header is read: its warnings are notes */
    int damage_count;
    int damage_effect;           /* the worst PF_JPEG_DAMAGE_* */
    int damage_row;              /* the first full-size row affected */
    char damage_message[JMSG_LENGTH_MAX + 64];
};
_Static_assert(offsetof(struct pf_jpeg_decoder, idct) == 0, "pf_idct_table_for reads the tables at the decoder's start");

static int64_t pf_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- error handling (shared by decoder and encoder) ---- */

static int pf_truncated_segment(j_common_ptr cinfo);

static void pf_error_exit(j_common_ptr cinfo) {
    pf_error_mgr *err = (pf_error_mgr *)cinfo->err;
    if (err->decoder != NULL && err->status == PF_JPEG_OK && pf_truncated_segment(cinfo)) {
        /* A marker segment cut off by the end of the file, parsed into the EOI we added:
           the reason is the truncation, not the nonsense libjpeg then found. */
        err->decoder->eof_offset = err->decoder->size;
        snprintf(err->message, sizeof err->message, "JPEG data ends early at byte %zu", err->decoder->size);
        err->status = PF_JPEG_EOF;
        longjmp(err->jump, 1);
    }
    if (err->pub.msg_code == JERR_IMAGE_TOO_BIG && cinfo->is_decompressor) {
        /* A header bomb, not a broken file: name the size the header declares. */
        j_decompress_ptr d = (j_decompress_ptr)cinfo;
        snprintf(err->message, sizeof err->message,
                 "JPEG header says %u×%u, over the largest JPEG libjpeg decodes (%ld pixels a side)",
                 (unsigned)d->image_width, (unsigned)d->image_height, (long)JPEG_MAX_DIMENSION);
        err->status = PF_JPEG_TOO_LARGE;
        longjmp(err->jump, 1);
    }
    char buffer[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, buffer);
    snprintf(err->message, sizeof err->message, "%s", buffer);
    if (err->status == PF_JPEG_OK) err->status = PF_JPEG_CORRUPT;
    longjmp(err->jump, 1);
}

static void pf_output_message(j_common_ptr cinfo) {
    (void)cinfo; /* never print: the caller decides what a person sees */
}

/* The full-size row the entropy decoder is in (an iMCU row is max_v_samp_factor blocks tall,
   whatever the scan's components). */
static int pf_input_row(const struct pf_jpeg_decoder *d) {
    long row = (long)d->cinfo.input_iMCU_row * d->cinfo.max_v_samp_factor * DCTSIZE;
    return row > (long)d->cinfo.image_height ? (int)d->cinfo.image_height : (int)row;
}

/* Damage found while the pixels are read: the first message and row are kept, the worst effect
   and the count are updated. libjpeg goes on (grey where data is missing); the caller decides
   whether the photo may (pf_jpeg_decoder_damage). */
static void pf_record_damage(struct pf_jpeg_decoder *d, int effect, int row, const char *message) {
    if (d->damage_count == 0) {
        snprintf(d->damage_message, sizeof d->damage_message, "%s", message);
        d->damage_row = row;
    } else if (row < d->damage_row) {
        d->damage_row = row;
    }
    if (effect > d->damage_effect) d->damage_effect = effect;
    if (d->damage_count < 1 << 30) d->damage_count++;
}

/* The data ended early (libjpeg's premature end, or its entropy decoder reached the EOI this
   glue added): in the first scan the rows below are missing; in a later scan of a progressive
   file they lack detail; a later scan of a sequential multi-scan file is a missing component. */
static void pf_record_eof(struct pf_jpeg_decoder *d, int row) {
    d->eof_offset = d->size;
    char message[96];
    snprintf(message, sizeof message, "JPEG data ends early at byte %zu", d->size);
    int effect = d->cinfo.input_scan_number <= 1 ? PF_JPEG_DAMAGE_MISSING
               : d->cinfo.progressive_mode ? PF_JPEG_DAMAGE_BLURRED : PF_JPEG_DAMAGE_WRONG;
    pf_record_damage(d, effect, row, message);
}

static void pf_emit_message(j_common_ptr cinfo, int msg_level) {
    if (msg_level >= 0) return; /* trace messages: not wanted */
    pf_error_mgr *err = (pf_error_mgr *)cinfo->err;
    err->pub.num_warnings++;
    struct pf_jpeg_decoder *d = err->decoder;
    if (d == NULL) return;
    int code = err->pub.msg_code;
    /* With an EOI of our own after the data, running out of entropy data shows up as
       "premature end of data segment" at that EOI instead. */
    int hit_added_eoi = code == JWRN_HIT_MARKER && d->eoi_added && cinfo->is_decompressor &&
                        ((j_decompress_ptr)cinfo)->unread_marker == JPEG_EOI;
    /* Bytes between the last scan and the end marker: padding some writers leave, the picture
       is whole (after damage, they are part of it). Warnings while a header is read are about
       the header (a bad ICC chunk, an odd JFIF version): notes, not damaged pixels. */
    int note = !d->decoding ||
               (code == JWRN_EXTRANEOUS_DATA && err->pub.msg_parm.i[1] == JPEG_EOI && d->damage_count == 0);
    /* Whatever libjpeg says once it has read into the EOI this glue added (a scan header cut
       short read as nonsense parameters) is the file ending early. */
    int read_past_end = d->eoi_added && cinfo->is_decompressor && ((j_decompress_ptr)cinfo)->src != NULL &&
                        ((j_decompress_ptr)cinfo)->src->next_input_byte > d->data + d->size;
    if (!note && (code == JWRN_JPEG_EOF || hit_added_eoi || read_past_end)) {
        pf_record_eof(d, pf_input_row(d));
        return;
    }
    char buffer[JMSG_LENGTH_MAX];
    (*cinfo->err->format_message)(cinfo, buffer);
    if (!note) {
        pf_record_damage(d, PF_JPEG_DAMAGE_WRONG, pf_input_row(d), buffer);
        return;
    }
    if (d->warning_count >= PF_MAX_WARNINGS) {
        d->warnings_dropped++;
        return;
    }
    char *copy = strdup(buffer);
    if (copy == NULL) { d->warnings_dropped++; return; }
    d->warnings[d->warning_count++] = copy;
}

static void pf_progress(j_common_ptr cinfo) {
    struct pf_jpeg_decoder *d = (struct pf_jpeg_decoder *)cinfo->client_data;
    pf_error_mgr *err = &d->err;
    if (d->cinfo.input_scan_number > PF_JPEG_MAX_SCANS) {
        snprintf(err->message, sizeof err->message,
                 "progressive JPEG has more than %d scans (a damaged or hostile file)",
                 PF_JPEG_MAX_SCANS);
        err->status = PF_JPEG_TOO_MANY_SCANS;
        longjmp(err->jump, 1);
    }
    if (atomic_load_explicit(&d->stop, memory_order_relaxed) ||
        (d->deadline_ns >= 0 && pf_now_ns() > d->deadline_ns)) {
        snprintf(err->message, sizeof err->message, "stopped: the photo took longer than the item timeout");
        err->status = PF_JPEG_STOPPED;
        longjmp(err->jump, 1);
    }
}

/* ---- decoder ---- */

/* True when an EOI was added and the marker segment libjpeg was reading when it failed
   runs past the end of the file. libjpeg only moves the source position after a whole
   segment is read, so at an error it still points at the segment's length field. */
static int pf_truncated_segment(j_common_ptr cinfo) {
    struct pf_jpeg_decoder *d = ((pf_error_mgr *)cinfo->err)->decoder;
    if (d == NULL || !d->eoi_added || !cinfo->is_decompressor) return 0;
    struct jpeg_source_mgr *src = ((j_decompress_ptr)cinfo)->src;
    if (src == NULL) return 0;
    const JOCTET *p = src->next_input_byte;
    const JOCTET *end = d->data + d->size;
    if (p < d->data || p > d->data + d->source_size) return 1; /* libjpeg's own fake EOI */
    if (p > end) return 1; /* a segment already read ran into the EOI we added */
    if (p < d->data + 4 || p[-2] != 0xFF) return 0; /* not just after a marker: not a segment */
    if (p >= end - 1) return 1;
    size_t length = ((size_t)p[0] << 8) | p[1];
    return length > (size_t)(end - p);
}

/* True when decoding consumed the EOI this glue added (the file has none of its own). */
static int pf_used_added_eoi(const pf_jpeg_decoder *d) {
    return d->eoi_added && d->cinfo.src != NULL &&
           d->cinfo.src->next_input_byte == d->data + d->source_size;
}

static void pf_reset_status(pf_jpeg_decoder *d) {
    d->err.status = PF_JPEG_OK;
    d->err.message[0] = '\0';
}

/* After a jump: drop the image state so the decoder can be started again. */
static int pf_failed(pf_jpeg_decoder *d) {
    if (d->created) jpeg_abort_decompress(&d->cinfo);
    d->state = ST_FAILED;
    return d->err.status == PF_JPEG_OK ? PF_JPEG_CORRUPT : d->err.status;
}

pf_jpeg_decoder *pf_jpeg_decoder_create(void) {
    pf_jpeg_decoder *d = calloc(1, sizeof *d);
    if (d == NULL) return NULL;
    d->deadline_ns = -1;
    atomic_init(&d->stop, 0);
    d->cinfo.err = jpeg_std_error(&d->err.pub);
    d->err.pub.error_exit = pf_error_exit;
    d->err.pub.output_message = pf_output_message;
    d->err.pub.emit_message = pf_emit_message;
    d->err.decoder = d;
    if (setjmp(d->err.jump)) {
        free(d);
        return NULL;
    }
    jpeg_create_decompress(&d->cinfo);
    d->created = 1;
    d->cinfo.client_data = d;
    d->progress.progress_monitor = pf_progress;
    d->cinfo.progress = &d->progress;
    return d;
}

void pf_jpeg_decoder_destroy(pf_jpeg_decoder *d) {
    if (d == NULL) return;
    if (d->created) jpeg_destroy_decompress(&d->cinfo);
    free(d->copy);
    free(d->exif);
    free(d->icc);
    free(d->scratch);
    for (int i = 0; i < PF_IDCT_COMPONENTS; i++) free(d->idct[i]);
    for (int i = 0; i < d->warning_count; i++) free(d->warnings[i]);
    free(d);
}

/* Points libjpeg at our copy and reads the header (again). Caller holds the jump point. */
static void pf_begin(pf_jpeg_decoder *d, int save_markers) {
    jpeg_mem_src(&d->cinfo, d->data, (unsigned long)d->source_size);
    if (save_markers) {
        jpeg_save_markers(&d->cinfo, JPEG_APP0 + 1, 0xFFFF);
        jpeg_save_markers(&d->cinfo, JPEG_APP0 + 2, 0xFFFF);
        jpeg_save_markers(&d->cinfo, JPEG_APP0 + 13, 0xFFFF);
    }
    jpeg_read_header(&d->cinfo, TRUE);
}

int pf_jpeg_decoder_read_header(pf_jpeg_decoder *d, const uint8_t *data, size_t size) {
    if (d == NULL || d->state != ST_EMPTY) return PF_JPEG_BAD_STATE;
    pf_reset_status(d);
    if (size == 0) {
        snprintf(d->err.message, sizeof d->err.message, "JPEG data ends early at byte 0");
        return PF_JPEG_EOF;
    }
    d->data = data;
    d->size = size;
    d->source_size = size;
    /* Some writers leave out the final EOI marker. Without it the entropy decoder runs off
       the end of complete data and libjpeg reports a premature end; with an EOI of ours
       appended (to a copy: the caller's bytes are never written) it only complains when image
       data is really missing (see emit_message). */
    if (size < 2 || data[size - 2] != 0xFF || data[size - 1] != 0xD9) {
        d->copy = malloc(size + 2);
        if (d->copy == NULL) return PF_JPEG_NO_MEMORY;
        memcpy(d->copy, data, size);
        d->copy[size] = 0xFF;
        d->copy[size + 1] = 0xD9;
        d->data = d->copy;
        d->source_size = size + 2;
        d->eoi_added = 1;
    }
    if (setjmp(d->err.jump)) return pf_failed(d);
    pf_begin(d, 1);
    for (jpeg_saved_marker_ptr m = d->cinfo.marker_list; m != NULL; m = m->next) {
        if (m->marker == JPEG_APP0 + 1 && m->data_length > 6 && d->exif == NULL &&
            memcmp(m->data, "Exif\0", 5) == 0) {
            /* The marker memory belongs to the image pool: keep our own copy. */
            d->exif = malloc(m->data_length - 6);
            if (d->exif != NULL) {
                memcpy(d->exif, m->data + 6, m->data_length - 6);
                d->exif_size = m->data_length - 6;
            }
        }
    }
    if (!jpeg_read_icc_profile(&d->cinfo, &d->icc, &d->icc_size)) {
        d->icc = NULL;
        d->icc_size = 0;
    }
    d->state = ST_HEADER;
    return PF_JPEG_OK;
}

void pf_jpeg_decoder_rebase(pf_jpeg_decoder *d, const uint8_t *data) {
    if (d == NULL || d->copy != NULL || data == NULL || data == d->data) return;
    struct jpeg_source_mgr *src = d->cinfo.src;
    /* Between calls libjpeg keeps only the source position (not one inside its own fake EOI) */
    if (src != NULL && src->next_input_byte >= d->data && src->next_input_byte <= d->data + d->source_size)
        src->next_input_byte = data + (src->next_input_byte - d->data);
    d->data = data;
}

int pf_jpeg_decoder_width(const pf_jpeg_decoder *d) { return (int)d->cinfo.image_width; }
int pf_jpeg_decoder_height(const pf_jpeg_decoder *d) { return (int)d->cinfo.image_height; }
int pf_jpeg_decoder_components(const pf_jpeg_decoder *d) { return d->cinfo.num_components; }
int pf_jpeg_decoder_is_progressive(const pf_jpeg_decoder *d) { return d->cinfo.progressive_mode ? 1 : 0; }

const uint8_t *pf_jpeg_decoder_exif(const pf_jpeg_decoder *d, size_t *size) {
    *size = d->exif_size;
    return d->exif;
}

const uint8_t *pf_jpeg_decoder_marker(const pf_jpeg_decoder *d, int index, int *code, size_t *size) {
    if (d == NULL || d->state != ST_HEADER) return NULL;
    int i = 0;
    for (jpeg_saved_marker_ptr m = d->cinfo.marker_list; m != NULL; m = m->next, i++) {
        if (i == index) {
            *code = m->marker;
            *size = m->data_length;
            return m->data;
        }
    }
    return NULL;
}

const uint8_t *pf_jpeg_decoder_icc(const pf_jpeg_decoder *d, size_t *size) {
    *size = d->icc_size;
    return d->icc;
}

void pf_jpeg_decoder_set_timeout(pf_jpeg_decoder *d, int64_t nanoseconds) {
    d->deadline_ns = nanoseconds < 0 ? -1 : pf_now_ns() + nanoseconds;
}

void pf_jpeg_decoder_request_stop(pf_jpeg_decoder *d) {
    atomic_store_explicit(&d->stop, 1, memory_order_relaxed);
}

/* Back to just after the header for another decode (the caller holds the jump point). */
static void pf_rewind(pf_jpeg_decoder *d) {
    d->decoding = 0;
    if (d->state != ST_HEADER) {
        jpeg_abort_decompress(&d->cinfo);
        pf_begin(d, 0);
        d->state = ST_HEADER;
    }
}

/* After jpeg_start_decompress, multi-scan files are read whole. One that stops at the EOI we
   added, at a scan boundary, would pass as a complete but blurred image: it is a truncated
   file, its later scans missing over the whole picture (unless a premature end inside a scan
   was already recorded). */
static void pf_check_added_eoi(pf_jpeg_decoder *d) {
    if (!((d->cinfo.progressive_mode || d->cinfo.input_scan_number > 1) && pf_used_added_eoi(d))) return;
    if (d->eof_offset == 0) pf_record_eof(d, 0);
}

/* A decode starts: no damage yet; warnings from here on are about the pixels. */
static void pf_begin_decoding(pf_jpeg_decoder *d) {
    d->damage_count = 0;
    d->damage_effect = PF_JPEG_DAMAGE_NONE;
    d->damage_row = 0;
    d->damage_message[0] = '\0';
    d->eof_offset = 0;
    d->decoding = 1;
}

/* After jpeg_start_decompress (which chose each component's IDCT): the components libjpeg scales
   with a plain C IDCT (3, 5, 6, 7 samples a block side, or 10, 12, 14 for halved chroma) get
   ours, with weights from their quantisation tables. Returns 0 when out of memory. */
static int pf_use_own_idct(pf_jpeg_decoder *d) {
    if (d->cinfo.num_components > PF_IDCT_COMPONENTS) return 1;
    for (int ci = 0; ci < d->cinfo.num_components; ci++) {
        jpeg_component_info *c = &d->cinfo.comp_info[ci];
        int n = c->DCT_scaled_size;
        pf_idct_method kernel = pf_idct_kernel(n, d->simd);
        if (kernel == NULL || !c->component_needed) continue;
        if (d->idct[ci] == NULL) {
            d->idct[ci] = aligned_alloc(32, sizeof(pf_idct_table));
            if (d->idct[ci] == NULL) return 0;
        }
        pf_idct_prepare(d->idct[ci], n, c->quant_table != NULL ? c->quant_table->quantval : NULL);
        d->cinfo.idct->inverse_DCT[ci] = kernel;
    }
    return 1;
}

int pf_jpeg_decoder_start(pf_jpeg_decoder *d, int eighths, int channels, int simd,
                          int *out_width, int *out_height) {
    if (d == NULL || d->state == ST_EMPTY) return PF_JPEG_BAD_STATE;
    if (!(eighths >= 1 && eighths <= 8) || !(channels == 3 || channels == 4)) return PF_JPEG_BAD_STATE;
    pf_reset_status(d);
    if (setjmp(d->err.jump)) return pf_failed(d);
    pf_rewind(d);
    d->cinfo.scale_num = (unsigned int)eighths;
    d->cinfo.scale_denom = 8;
    d->cinfo.raw_data_out = FALSE;
    d->channels = channels;
    d->simd = simd;
    d->cmyk = d->cinfo.jpeg_color_space == JCS_CMYK || d->cinfo.jpeg_color_space == JCS_YCCK;
    d->adobe_inverted = d->cmyk && d->cinfo.saw_Adobe_marker;
    if (d->cmyk) {
        d->cinfo.out_color_space = JCS_CMYK;
    } else {
        /* libjpeg-turbo expands grey to RGB and fills RGBA's alpha with 255 itself. */
        d->cinfo.out_color_space = channels == 4 ? JCS_EXT_RGBA : JCS_RGB;
    }
    pf_begin_decoding(d);
    jpeg_start_decompress(&d->cinfo);
    pf_check_added_eoi(d);
    if (!pf_use_own_idct(d)) {
        jpeg_abort_decompress(&d->cinfo);
        d->state = ST_FAILED;
        return PF_JPEG_NO_MEMORY;
    }
    if (d->cmyk) {
        size_t need = (size_t)d->cinfo.output_width * 4;
        if (d->scratch_size < need) {
            free(d->scratch);
            d->scratch = malloc(need);
            d->scratch_size = d->scratch ? need : 0;
            if (d->scratch == NULL) {
                jpeg_abort_decompress(&d->cinfo);
                d->state = ST_FAILED;
                return PF_JPEG_NO_MEMORY;
            }
        }
    }
    *out_width = (int)d->cinfo.output_width;
    *out_height = (int)d->cinfo.output_height;
    d->state = ST_STARTED;
    return PF_JPEG_OK;
}

static inline uint8_t pf_mul255(unsigned a, unsigned b) {
    unsigned t = a * b + 128;
    return (uint8_t)((t + (t >> 8)) >> 8);
}

static void pf_cmyk_to_rgb(const uint8_t *src, uint8_t *dst, int width, int channels, int inverted) {
    for (int x = 0; x < width; x++, src += 4, dst += channels) {
        unsigned c = src[0], m = src[1], y = src[2], k = src[3];
        if (!inverted) { c = 255 - c; m = 255 - m; y = 255 - y; k = 255 - k; }
        /* Now 255 means "no ink": the plain naive conversion (no CMYK profile applied). */
        dst[0] = pf_mul255(c, k);
        dst[1] = pf_mul255(m, k);
        dst[2] = pf_mul255(y, k);
        if (channels == 4) dst[3] = 255;
    }
}

int pf_jpeg_decoder_read_rows(pf_jpeg_decoder *d, uint8_t *buffer, size_t stride,
                              int max_rows, int *rows_read) {
    *rows_read = 0;
    if (d == NULL || d->state != ST_STARTED) return PF_JPEG_BAD_STATE;
    pf_reset_status(d);
    if (setjmp(d->err.jump)) return pf_failed(d);
    int n = 0;
    while (n < max_rows && d->cinfo.output_scanline < d->cinfo.output_height) {
        if (d->cmyk) {
            JSAMPROW row = d->scratch;
            JDIMENSION got = jpeg_read_scanlines(&d->cinfo, &row, 1);
            if (got == 0) break;
            pf_cmyk_to_rgb(d->scratch, buffer + (size_t)n * stride, (int)d->cinfo.output_width,
                           d->channels, d->adobe_inverted);
            n++;
        } else {
            JSAMPROW rows[16];
            int want = max_rows - n;
            if (want > 16) want = 16;
            for (int i = 0; i < want; i++) rows[i] = buffer + (size_t)(n + i) * stride;
            JDIMENSION got = jpeg_read_scanlines(&d->cinfo, rows, (JDIMENSION)want);
            if (got == 0) break;
            n += (int)got;
        }
        *rows_read = n; /* kept in memory the caller owns: valid after a jump too */
    }
    *rows_read = n;
    return PF_JPEG_OK;
}

int pf_jpeg_decoder_planar_rows(const pf_jpeg_decoder *d) {
    if (d == NULL || d->state == ST_EMPTY) return 0;
    const struct jpeg_decompress_struct *c = &d->cinfo;
    if (c->jpeg_color_space != JCS_YCbCr || c->num_components != 3) return 0;
    const jpeg_component_info *y = &c->comp_info[0], *cb = &c->comp_info[1], *cr = &c->comp_info[2];
    if (y->h_samp_factor != 2 || !(y->v_samp_factor == 1 || y->v_samp_factor == 2)) return 0;
    if (cb->h_samp_factor != 1 || cb->v_samp_factor != 1 || cr->h_samp_factor != 1 || cr->v_samp_factor != 1) return 0;
    return y->v_samp_factor;
}

int pf_jpeg_decoder_start_planes(pf_jpeg_decoder *d, int *luma_stride, int *chroma_stride) {
    if (d == NULL || d->state == ST_EMPTY) return PF_JPEG_BAD_STATE;
    pf_reset_status(d);
    if (setjmp(d->err.jump)) return pf_failed(d);
    pf_rewind(d);
    if (pf_jpeg_decoder_planar_rows(d) == 0) return PF_JPEG_BAD_STATE;
    d->cinfo.scale_num = 1;
    d->cinfo.scale_denom = 1;
    d->cinfo.raw_data_out = TRUE;
    d->cmyk = 0;
    pf_begin_decoding(d);
    jpeg_start_decompress(&d->cinfo);
    pf_check_added_eoi(d);
    *luma_stride = (int)d->cinfo.comp_info[0].width_in_blocks * DCTSIZE;
    *chroma_stride = (int)d->cinfo.comp_info[1].width_in_blocks * DCTSIZE;
    d->state = ST_STARTED;
    return PF_JPEG_OK;
}

int pf_jpeg_decoder_read_planes(pf_jpeg_decoder *d, uint8_t *y, uint8_t *cb, uint8_t *cr, int *rows_read) {
    *rows_read = 0;
    if (d == NULL || d->state != ST_STARTED || !d->cinfo.raw_data_out) return PF_JPEG_BAD_STATE;
    pf_reset_status(d);
    if (setjmp(d->err.jump)) return pf_failed(d);
    if (d->cinfo.output_scanline >= d->cinfo.output_height) return PF_JPEG_OK;
    int v = d->cinfo.comp_info[0].v_samp_factor;
    size_t luma_stride = (size_t)d->cinfo.comp_info[0].width_in_blocks * DCTSIZE;
    size_t chroma_stride = (size_t)d->cinfo.comp_info[1].width_in_blocks * DCTSIZE;
    JSAMPROW luma_rows[2 * DCTSIZE], cb_rows[DCTSIZE], cr_rows[DCTSIZE];
    for (int i = 0; i < v * DCTSIZE; i++) luma_rows[i] = y + (size_t)i * luma_stride;
    for (int i = 0; i < DCTSIZE; i++) {
        cb_rows[i] = cb + (size_t)i * chroma_stride;
        cr_rows[i] = cr + (size_t)i * chroma_stride;
    }
    JSAMPARRAY planes[3] = { luma_rows, cb_rows, cr_rows };
    JDIMENSION got = jpeg_read_raw_data(&d->cinfo, planes, (JDIMENSION)(v * DCTSIZE));
    *rows_read = (int)got;
    return PF_JPEG_OK;
}

int pf_jpeg_decoder_finish(pf_jpeg_decoder *d) {
    if (d == NULL || d->state != ST_STARTED) return PF_JPEG_BAD_STATE;
    pf_reset_status(d);
    if (setjmp(d->err.jump)) return pf_failed(d);
    jpeg_finish_decompress(&d->cinfo);
    d->state = ST_DONE;
    return PF_JPEG_OK;
}

const char *pf_jpeg_decoder_message(const pf_jpeg_decoder *d) { return d->err.message; }
size_t pf_jpeg_decoder_eof_offset(const pf_jpeg_decoder *d) { return d->eof_offset; }
int pf_jpeg_decoder_warning_count(const pf_jpeg_decoder *d) { return d->warning_count; }
const char *pf_jpeg_decoder_warning(const pf_jpeg_decoder *d, int index) {
    return index >= 0 && index < d->warning_count ? d->warnings[index] : "";
}
int pf_jpeg_decoder_warnings_dropped(const pf_jpeg_decoder *d) { return d->warnings_dropped; }
int pf_jpeg_decoder_damage(const pf_jpeg_decoder *d, int *effect, int *row, const char **message) {
    *effect = d->damage_effect;
    *row = d->damage_row;
    *message = d->damage_message;
    return d->damage_count;
}

/* ---- encoder ---- */

/* Everything the encoder touches after setjmp lives here, on the heap, so its values are
   well defined after a jump (no non-volatile locals change between setjmp and longjmp). */
struct pf_jpeg_encoder {
    struct jpeg_compress_struct cinfo;
    pf_error_mgr err;
    int created;
    int failed;
    unsigned char *given;        /* the caller's buffer (not ours to free) */
    unsigned char *buffer;       /* the output: `given`, or one grown here (malloc, ours) */
    size_t capacity;             /* bytes `buffer` holds */
    size_t size;                 /* bytes written, once finished */
    struct jpeg_destination_mgr dest;
    JOCTET *exif_marker;
};

/* The destination: our own growing buffer, not jpeg_mem_dest, whose current buffer is known
   only after jpeg_finish_compress: a compress stopped half way (a failed photo) left us a
   pointer it had already freed while growing, and freed it again (found by the finish fuzz
   target). Here `buffer` is always the live one. */
static void pf_dest_init(j_compress_ptr cinfo) {
    pf_jpeg_encoder *e = (pf_jpeg_encoder *)cinfo->client_data;
    e->dest.next_output_byte = e->buffer;
    e->dest.free_in_buffer = e->capacity;
}

static boolean pf_dest_empty(j_compress_ptr cinfo) {
    pf_jpeg_encoder *e = (pf_jpeg_encoder *)cinfo->client_data;
    size_t used = e->capacity;   /* called when the buffer is full */
    size_t next = used * 2;
    unsigned char *grown = next > used ? malloc(next) : NULL;
    if (grown == NULL) ERREXIT1(cinfo, JERR_OUT_OF_MEMORY, 10);
    memcpy(grown, e->buffer, used);
    if (e->buffer != e->given) free(e->buffer);
    e->buffer = grown;
    e->capacity = next;
    e->dest.next_output_byte = grown + used;
    e->dest.free_in_buffer = next - used;
    return TRUE;
}

static void pf_dest_term(j_compress_ptr cinfo) {
    pf_jpeg_encoder *e = (pf_jpeg_encoder *)cinfo->client_data;
    e->size = e->capacity - e->dest.free_in_buffer;
}

/* A failed call: the message stays readable; nothing more can be written. */
static int pf_encoder_failed(pf_jpeg_encoder *e) {
    e->failed = 1;
    return e->err.status == PF_JPEG_OK ? PF_JPEG_CORRUPT : e->err.status;
}

int pf_jpeg_encoder_start(pf_jpeg_encoder **out, int width, int height, int channels,
                          int quality, int progressive, int optimize_coding,
                          const uint8_t *icc, size_t icc_size,
                          const uint8_t *exif, size_t exif_size,
                          const pf_jpeg_marker *markers, int marker_count,
                          uint8_t *buffer, size_t buffer_size) {
    *out = NULL;
    pf_jpeg_encoder *e = calloc(1, sizeof *e);
    if (e == NULL) return PF_JPEG_NO_MEMORY;
    *out = e;
    e->cinfo.err = jpeg_std_error(&e->err.pub);
    e->err.pub.error_exit = pf_error_exit;
    e->err.pub.output_message = pf_output_message;
    e->err.pub.emit_message = pf_emit_message;
    if (exif != NULL && exif_size > 65533 - 6) {
        snprintf(e->err.message, sizeof e->err.message,
                 "EXIF block of %zu bytes does not fit a JPEG APP1 marker (at most 65527)", exif_size);
        e->failed = 1;
        return PF_JPEG_BAD_STATE;
    }
    for (int i = 0; i < marker_count; i++) {
        if (markers[i].size > 65533) {
            snprintf(e->err.message, sizeof e->err.message,
                     "APP%d block of %zu bytes does not fit a JPEG marker (at most 65533)",
                     markers[i].code - JPEG_APP0, markers[i].size);
            e->failed = 1;
            return PF_JPEG_BAD_STATE;
        }
    }
    if (!(channels == 3 || channels == 4)) {
        snprintf(e->err.message, sizeof e->err.message, "JPEG rows must be RGB or RGBX");
        e->failed = 1;
        return PF_JPEG_BAD_STATE;
    }
    if (setjmp(e->err.jump)) return pf_encoder_failed(e);
    jpeg_create_compress(&e->cinfo);
    e->created = 1;
    /* A buffer of the caller's (reused from photo to photo) when one is given; a larger one
       is malloc'd only when the file outgrows it. */
    e->given = buffer_size > 0 ? buffer : NULL;
    e->buffer = e->given;
    e->capacity = e->given ? buffer_size : 0;
    if (e->buffer == NULL) {
        e->capacity = 64 * 1024;
        e->buffer = malloc(e->capacity);
        if (e->buffer == NULL) ERREXIT1(&e->cinfo, JERR_OUT_OF_MEMORY, 10);
    }
    e->cinfo.client_data = e;
    e->dest.init_destination = pf_dest_init;
    e->dest.empty_output_buffer = pf_dest_empty;
    e->dest.term_destination = pf_dest_term;
    e->cinfo.dest = &e->dest;
    e->cinfo.image_width = (JDIMENSION)width;
    e->cinfo.image_height = (JDIMENSION)height;
    e->cinfo.input_components = channels;
    e->cinfo.in_color_space = channels == 4 ? JCS_EXT_RGBX : JCS_RGB;
    jpeg_set_defaults(&e->cinfo);
    jpeg_set_quality(&e->cinfo, quality < 1 ? 1 : quality > 100 ? 100 : quality, TRUE);
    /* 4:2:0: luma at full resolution, chroma halved both ways. */
    e->cinfo.comp_info[0].h_samp_factor = 2;
    e->cinfo.comp_info[0].v_samp_factor = 2;
    e->cinfo.comp_info[1].h_samp_factor = 1;
    e->cinfo.comp_info[1].v_samp_factor = 1;
    e->cinfo.comp_info[2].h_samp_factor = 1;
    e->cinfo.comp_info[2].v_samp_factor = 1;
    e->cinfo.optimize_coding = optimize_coding ? TRUE : FALSE;
    /* An EXIF file carries its own resolution; APP1 should follow SOI directly. */
    if (exif != NULL && exif_size > 0) e->cinfo.write_JFIF_header = FALSE;
    if (progressive) jpeg_simple_progression(&e->cinfo);
    jpeg_start_compress(&e->cinfo, TRUE);
    if (exif != NULL && exif_size > 0) {
        e->exif_marker = malloc(exif_size + 6);
        if (e->exif_marker == NULL) ERREXIT1(&e->cinfo, JERR_OUT_OF_MEMORY, 0);
        memcpy(e->exif_marker, "Exif\0\0", 6);
        memcpy(e->exif_marker + 6, exif, exif_size);
        jpeg_write_marker(&e->cinfo, JPEG_APP0 + 1, e->exif_marker, (unsigned int)(exif_size + 6));
    }
    /* XMP (APP1) after the EXIF APP1, then the ICC profile (APP2), then IPTC (APP13). */
    for (int i = 0; i < marker_count; i++)
        if (markers[i].code == JPEG_APP0 + 1)
            jpeg_write_marker(&e->cinfo, markers[i].code, markers[i].data, (unsigned int)markers[i].size);
    if (icc != NULL && icc_size > 0)
        jpeg_write_icc_profile(&e->cinfo, icc, (unsigned int)icc_size);
    for (int i = 0; i < marker_count; i++)
        if (markers[i].code != JPEG_APP0 + 1)
            jpeg_write_marker(&e->cinfo, markers[i].code, markers[i].data, (unsigned int)markers[i].size);
    return PF_JPEG_OK;
}

int pf_jpeg_encoder_write(pf_jpeg_encoder *e, const uint8_t *rows, size_t stride, int count) {
    if (e == NULL || e->failed || !e->created) return PF_JPEG_BAD_STATE;
    if (count < 0 || e->cinfo.next_scanline + (JDIMENSION)count > e->cinfo.image_height) {
        snprintf(e->err.message, sizeof e->err.message, "more JPEG rows than the image has");
        e->failed = 1;
        return PF_JPEG_BAD_STATE;
    }
    if (setjmp(e->err.jump)) return pf_encoder_failed(e);
    int done = 0;
    while (done < count) {
        JSAMPROW pointers[16];
        int want = count - done > 16 ? 16 : count - done;
        for (int i = 0; i < want; i++) pointers[i] = (JSAMPROW)(rows + (size_t)(done + i) * stride);
        done += (int)jpeg_write_scanlines(&e->cinfo, pointers, (JDIMENSION)want);
    }
    return PF_JPEG_OK;
}

int pf_jpeg_encoder_finish(pf_jpeg_encoder *e, const uint8_t **out, size_t *out_size, int *owned) {
    *out = NULL;
    *out_size = 0;
    *owned = 0;
    if (e == NULL || e->failed || !e->created) return PF_JPEG_BAD_STATE;
    if (e->cinfo.next_scanline != e->cinfo.image_height) {
        snprintf(e->err.message, sizeof e->err.message, "JPEG finished after %u of %u rows",
                 e->cinfo.next_scanline, e->cinfo.image_height);
        e->failed = 1;
        return PF_JPEG_BAD_STATE;
    }
    if (setjmp(e->err.jump)) return pf_encoder_failed(e);
    jpeg_finish_compress(&e->cinfo);
    *out = e->buffer;
    *out_size = e->size;
    *owned = e->buffer != e->given;
    return PF_JPEG_OK;
}

const char *pf_jpeg_encoder_message(const pf_jpeg_encoder *e) { return e ? e->err.message : "out of memory"; }

void pf_jpeg_encoder_destroy(pf_jpeg_encoder *e) {
    if (e == NULL) return;
    if (e->created) jpeg_destroy_compress(&e->cinfo);
    if (e->buffer != e->given) free(e->buffer);
    free(e->exif_marker);
    free(e);
}


