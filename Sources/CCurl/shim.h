#pragma once
#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic: Swift cannot call them. One typed
// wrapper per argument kind.
static inline CURLcode pf_curl_setopt_long(CURL *curl, CURLoption option, long value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode pf_curl_setopt_string(CURL *curl, CURLoption option, const char *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode pf_curl_setopt_pointer(CURL *curl, CURLoption option, void *value) {
    return curl_easy_setopt(curl, option, value);
}
static inline CURLcode pf_curl_setopt_slist(CURL *curl, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(curl, option, value);
}
typedef size_t (*pf_curl_write_callback)(char *data, size_t size, size_t count, void *context);
static inline CURLcode pf_curl_setopt_write(CURL *curl, pf_curl_write_callback callback, void *context) {
    CURLcode code = curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, callback);
    return code != CURLE_OK ? code : curl_easy_setopt(curl, CURLOPT_WRITEDATA, context);
}
static inline CURLcode pf_curl_response_code(CURL *curl, long *code) {
    return curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, code);
}

// Delivery (Sources/Delivery): sizes, uploads read from a file, response headers, progress
// (to stop a transfer), and what a transfer measured.
static inline CURLcode pf_curl_setopt_off(CURL *curl, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(curl, option, value);
}
typedef size_t (*pf_curl_read_callback)(char *buffer, size_t size, size_t count, void *context);
static inline CURLcode pf_curl_setopt_read(CURL *curl, pf_curl_read_callback callback, void *context) {
    CURLcode code = curl_easy_setopt(curl, CURLOPT_READFUNCTION, callback);
    return code != CURLE_OK ? code : curl_easy_setopt(curl, CURLOPT_READDATA, context);
}
static inline CURLcode pf_curl_setopt_header(CURL *curl, pf_curl_write_callback callback, void *context) {
    CURLcode code = curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, callback);
    return code != CURLE_OK ? code : curl_easy_setopt(curl, CURLOPT_HEADERDATA, context);
}
typedef int (*pf_curl_progress_callback)(void *context, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow);
static inline CURLcode pf_curl_setopt_progress(CURL *curl, pf_curl_progress_callback callback, void *context) {
    CURLcode code = curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, callback);
    if (code == CURLE_OK) code = curl_easy_setopt(curl, CURLOPT_XFERINFODATA, context);
    return code != CURLE_OK ? code : curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
}
static inline CURLcode pf_curl_setopt_mime(CURL *curl, curl_mime *mime) {
    return curl_easy_setopt(curl, CURLOPT_MIMEPOST, mime);
}
static inline CURLcode pf_curl_info_off(CURL *curl, CURLINFO info, curl_off_t *value) {
    return curl_easy_getinfo(curl, info, value);
}
