/* The web row's floor measured inside one process, for bench/tools/paired-floor.sh: libjpeg's own
   full-size decode of each source (RGB, the accurate integer IDCT, as tjbench -rgb decodes) and its
   encode of each output's pixels (quality 88, chroma 4:2:0, the accurate integer DCT, no optimised
   Huffman tables: bench/web.json5's output, as photofinish encodes it), each timed with the
   process's CPU clock around the libjpeg calls alone (the files are read first, untimed).

     cc -O2 jpeg-floor.c -ljpeg -o jpeg-floor
     jpeg-floor SOURCE.jpg... -- OUTPUT.ppm...     prints: decode ms a photo, encode ms a photo */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <jpeglib.h>

static double cpu_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static unsigned char *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) { perror(path); exit(2); }
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    rewind(f);
    unsigned char *bytes = malloc(*size);
    if (bytes == NULL || fread(bytes, 1, *size, f) != *size) { fprintf(stderr, "%s: cannot read\n", path); exit(2); }
    fclose(f);
    return bytes;
}

int main(int argc, char **argv) {
    int split = 1;
    while (split < argc && strcmp(argv[split], "--") != 0) split++;
    if (split == 1 || split >= argc - 1) { fprintf(stderr, "usage: jpeg-floor SOURCE.jpg... -- OUTPUT.ppm...\n"); return 2; }
    double decode = 0, encode = 0;
    for (int i = 1; i < split; i++) {
        size_t size;
        unsigned char *bytes = slurp(argv[i], &size);
        double t0 = cpu_ms();
        struct jpeg_decompress_struct d;
        struct jpeg_error_mgr err;
        d.err = jpeg_std_error(&err);
        jpeg_create_decompress(&d);
        jpeg_mem_src(&d, bytes, size);
        jpeg_read_header(&d, TRUE);
        d.out_color_space = JCS_RGB;
        d.dct_method = JDCT_ISLOW;
        jpeg_start_decompress(&d);
        JSAMPROW row = malloc((size_t)d.output_width * 3);
        while (d.output_scanline < d.output_height) jpeg_read_scanlines(&d, &row, 1);
        jpeg_finish_decompress(&d);
        jpeg_destroy_decompress(&d);
        decode += cpu_ms() - t0;
        free(row);
        free(bytes);
    }
    for (int i = split + 1; i < argc; i++) {
        size_t size;
        unsigned char *ppm = slurp(argv[i], &size);
        int w, h, maxval, header = 0;
        if (sscanf((const char *)ppm, "P6 %d %d %d%n", &w, &h, &maxval, &header) != 3 || maxval != 255
            || (size_t)header + 1 + (size_t)w * h * 3 > size) { fprintf(stderr, "%s: not an 8-bit P6\n", argv[i]); return 2; }
        const unsigned char *pixels = ppm + header + 1;
        unsigned char *out = NULL;
        unsigned long out_size = 0;
        double t0 = cpu_ms();
        struct jpeg_compress_struct c;
        struct jpeg_error_mgr err;
        c.err = jpeg_std_error(&err);
        jpeg_create_compress(&c);
        jpeg_mem_dest(&c, &out, &out_size);
        c.image_width = (JDIMENSION)w;
        c.image_height = (JDIMENSION)h;
        c.input_components = 3;
        c.in_color_space = JCS_RGB;
        jpeg_set_defaults(&c);   /* YCbCr 4:2:0, no optimised Huffman tables */
        jpeg_set_quality(&c, 88, TRUE);
        c.dct_method = JDCT_ISLOW;
        jpeg_start_compress(&c, TRUE);
        while (c.next_scanline < c.image_height) {
            JSAMPROW row = (JSAMPROW)(pixels + (size_t)c.next_scanline * (size_t)w * 3);
            jpeg_write_scanlines(&c, &row, 1);
        }
        jpeg_finish_compress(&c);
        jpeg_destroy_compress(&c);
        encode += cpu_ms() - t0;
        free(out);
        free(ppm);
    }
    printf("%.2f %.2f\n", decode / (split - 1), encode / (argc - split - 1));
    return 0;
}
