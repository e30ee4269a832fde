#include "CKilnCurl.h"
#include <dlfcn.h>
#include <stdio.h>

static struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    CURLM *(*multi_init)(void);
    CURLMcode (*multi_add_handle)(CURLM *, CURL *);
    CURLMcode (*multi_remove_handle)(CURLM *, CURL *);
    CURLMcode (*multi_perform)(CURLM *, int *);
    CURLMcode (*multi_poll)(CURLM *, struct curl_waitfd *, unsigned int, int, int *);
    CURLMcode (*multi_wakeup)(CURLM *);
    CURLMsg *(*multi_info_read)(CURLM *, int *);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} curl;

int kiln_curl_load(char *error, size_t size) {
    if (curl.easy_init != NULL) return 0;
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(error, size, "the http plugin needs libcurl (Debian: apt-get install libcurl4): %s", dlerror());
        return -1;
    }
#define RESOLVE(field, symbol)                                                                   \
    *(void **)(&curl.field) = dlsym(library, symbol);                                            \
    if (curl.field == NULL) {                                                                    \
        snprintf(error, size, "libcurl has no %s: %s", symbol, dlerror());                       \
        return -1;                                                                               \
    }
    RESOLVE(global_init, "curl_global_init")
    RESOLVE(easy_cleanup, "curl_easy_cleanup")
    RESOLVE(easy_strerror, "curl_easy_strerror")
    RESOLVE(easy_setopt, "curl_easy_setopt")
    RESOLVE(easy_getinfo, "curl_easy_getinfo")
    RESOLVE(multi_init, "curl_multi_init")
    RESOLVE(multi_add_handle, "curl_multi_add_handle")
    RESOLVE(multi_remove_handle, "curl_multi_remove_handle")
    RESOLVE(multi_perform, "curl_multi_perform")
    RESOLVE(multi_poll, "curl_multi_poll")
    RESOLVE(multi_wakeup, "curl_multi_wakeup")
    RESOLVE(multi_info_read, "curl_multi_info_read")
    RESOLVE(slist_append, "curl_slist_append")
    RESOLVE(slist_free_all, "curl_slist_free_all")
    RESOLVE(easy_init, "curl_easy_init")  // last: it marks the table complete
#undef RESOLVE
    return 0;
}

CURLcode kiln_curl_global_init(long flags) { return curl.global_init(flags); }
CURL *kiln_curl_easy_init(void) { return curl.easy_init(); }
void kiln_curl_easy_cleanup(CURL *handle) { curl.easy_cleanup(handle); }
const char *kiln_curl_easy_strerror(CURLcode code) { return curl.easy_strerror(code); }
CURLM *kiln_curl_multi_init(void) { return curl.multi_init(); }
CURLMcode kiln_curl_multi_add_handle(CURLM *multi, CURL *handle) { return curl.multi_add_handle(multi, handle); }
CURLMcode kiln_curl_multi_remove_handle(CURLM *multi, CURL *handle) { return curl.multi_remove_handle(multi, handle); }
CURLMcode kiln_curl_multi_perform(CURLM *multi, int *running) { return curl.multi_perform(multi, running); }
CURLMcode kiln_curl_multi_poll(CURLM *multi, int timeout_ms) { return curl.multi_poll(multi, NULL, 0, timeout_ms, NULL); }
CURLMcode kiln_curl_multi_wakeup(CURLM *multi) { return curl.multi_wakeup(multi); }
struct curl_slist *kiln_curl_slist_append(struct curl_slist *list, const char *text) { return curl.slist_append(list, text); }
void kiln_curl_slist_free_all(struct curl_slist *list) { curl.slist_free_all(list); }

CURLcode kiln_curl_set_long(CURL *handle, CURLoption option, long value) { return curl.easy_setopt(handle, option, value); }
CURLcode kiln_curl_set_offset(CURL *handle, CURLoption option, curl_off_t value) { return curl.easy_setopt(handle, option, value); }
CURLcode kiln_curl_set_string(CURL *handle, CURLoption option, const char *value) { return curl.easy_setopt(handle, option, value); }
CURLcode kiln_curl_set_pointer(CURL *handle, CURLoption option, void *value) { return curl.easy_setopt(handle, option, value); }
CURLcode kiln_curl_set_write_function(CURL *handle, size_t (*function)(char *, size_t, size_t, void *)) {
    return curl.easy_setopt(handle, CURLOPT_WRITEFUNCTION, function);
}
CURLcode kiln_curl_set_read_function(CURL *handle, size_t (*function)(char *, size_t, size_t, void *)) {
    return curl.easy_setopt(handle, CURLOPT_READFUNCTION, function);
}
long kiln_curl_response_code(CURL *handle) {
    long code = 0;
    curl.easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &code);
    return code;
}
void *kiln_curl_private(CURL *handle) {
    char *pointer = NULL;
    curl.easy_getinfo(handle, CURLINFO_PRIVATE, &pointer);
    return pointer;
}
CURL *kiln_curl_next_done(CURLM *multi, CURLcode *result) {
    int left = 0;
    CURLMsg *message;
    while ((message = curl.multi_info_read(multi, &left)) != NULL) {
        if (message->msg == CURLMSG_DONE) {
            *result = message->data.result;
            return message->easy_handle;
        }
    }
    return NULL;
}
