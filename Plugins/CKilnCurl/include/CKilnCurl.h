#ifndef CKILN_CURL_H
#define CKILN_CURL_H
// libcurl for the http plugin (Debian: libcurl4-openssl-dev). curl_easy_setopt and friends are
// variadic, which Swift can't call: these wrappers give each a fixed type.
#include <curl/curl.h>

CURLcode kiln_curl_set_long(CURL *_Nonnull handle, CURLoption option, long value);
CURLcode kiln_curl_set_offset(CURL *_Nonnull handle, CURLoption option, curl_off_t value);
CURLcode kiln_curl_set_string(CURL *_Nonnull handle, CURLoption option, const char *_Nullable value);
CURLcode kiln_curl_set_pointer(CURL *_Nonnull handle, CURLoption option, void *_Nullable value);
CURLcode kiln_curl_set_write_function(CURL *_Nonnull handle, size_t (*_Nonnull function)(char *_Nonnull, size_t, size_t, void *_Nullable));
CURLcode kiln_curl_set_read_function(CURL *_Nonnull handle, size_t (*_Nonnull function)(char *_Nonnull, size_t, size_t, void *_Nullable));
long kiln_curl_response_code(CURL *_Nonnull handle);
void *_Nullable kiln_curl_private(CURL *_Nonnull handle);
/// The easy handle and result of a finished transfer, or NULL when none is left.
CURL *_Nullable kiln_curl_next_done(CURLM *_Nonnull multi, CURLcode *_Nonnull result);
#endif
