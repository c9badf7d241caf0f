// Debian's libcurl, seen from Swift: what the client library reads event
// streams with on Linux.
//
// `curl_easy_setopt` and `curl_easy_getinfo` are C-variadic, which Swift does
// not import; each shim below is one of them with its argument's type fixed.
#ifndef CCURL_SHIMS_H
#define CCURL_SHIMS_H

#include <curl/curl.h>

static inline CURLcode ccurl_setopt_long(CURL *easy, CURLoption option, long value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode ccurl_setopt_pointer(CURL *easy, CURLoption option, void *value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode ccurl_setopt_string(CURL *easy, CURLoption option, const char *value) {
    return curl_easy_setopt(easy, option, value);
}

static inline CURLcode ccurl_setopt_list(CURL *easy, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(easy, option, value);
}

/// For CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION.
static inline CURLcode ccurl_setopt_data_callback(CURL *easy, CURLoption option, curl_write_callback callback) {
    return curl_easy_setopt(easy, option, callback);
}

static inline CURLcode ccurl_setopt_progress_callback(CURL *easy, curl_xferinfo_callback callback) {
    return curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, callback);
}

static inline CURLcode ccurl_setopt_sockopt_callback(CURL *easy, curl_sockopt_callback callback) {
    return curl_easy_setopt(easy, CURLOPT_SOCKOPTFUNCTION, callback);
}

static inline CURLcode ccurl_setopt_closesocket_callback(CURL *easy, curl_closesocket_callback callback) {
    return curl_easy_setopt(easy, CURLOPT_CLOSESOCKETFUNCTION, callback);
}

static inline CURLcode ccurl_response_code(CURL *easy, long *code) {
    return curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, code);
}

/* The system's errno behind a failed connect or read (ECONNREFUSED, ...). */
static inline CURLcode ccurl_os_errno(CURL *easy, long *code) {
    return curl_easy_getinfo(easy, CURLINFO_OS_ERRNO, code);
}

#endif
