#ifndef CKILN_CURL_H
#define CKILN_CURL_H
// libcurl for the http plugin. Only its types and constants come from <curl/curl.h> (Debian:
// libcurl4-openssl-dev): the library itself, with its dozens of dependencies (TLS, HTTP/2, LDAP,
// Kerberos…), is opened with dlopen on the first transfer, so loading the plugin costs kiln's
// start-up almost nothing. Every libcurl call goes through these wrappers, which also give the
// variadic curl_easy_setopt and curl_easy_getinfo fixed types Swift can call.
#include <curl/curl.h>
#include <stddef.h>

/// Opens libcurl (once); 0 on success, or -1 with a message in `error`.
int kiln_curl_load(char *_Nonnull error, size_t size);

CURLcode kiln_curl_global_init(long flags);
CURL *_Nullable kiln_curl_easy_init(void);
void kiln_curl_easy_cleanup(CURL *_Nonnull handle);
const char *_Nonnull kiln_curl_easy_strerror(CURLcode code);
CURLM *_Nullable kiln_curl_multi_init(void);
CURLMcode kiln_curl_multi_add_handle(CURLM *_Nonnull multi, CURL *_Nonnull handle);
CURLMcode kiln_curl_multi_remove_handle(CURLM *_Nonnull multi, CURL *_Nonnull handle);
CURLMcode kiln_curl_multi_perform(CURLM *_Nonnull multi, int *_Nonnull running);
CURLMcode kiln_curl_multi_poll(CURLM *_Nonnull multi, int timeout_ms);
CURLMcode kiln_curl_multi_wakeup(CURLM *_Nonnull multi);
struct curl_slist *_Nullable kiln_curl_slist_append(struct curl_slist *_Nullable list, const char *_Nonnull text);
void kiln_curl_slist_free_all(struct curl_slist *_Nullable list);

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
