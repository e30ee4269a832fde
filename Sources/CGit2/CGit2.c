#include "CGit2.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

// One pointer per function in the list, filled by kiln_git2_load.
#define KILN_GIT2_POINTER(result, name, parameters, arguments) static result(*pointer_##name) parameters;
KILN_GIT2_FUNCTIONS(KILN_GIT2_POINTER)
#undef KILN_GIT2_POINTER

static pthread_once_t once = PTHREAD_ONCE_INIT;
static char failure[512];
static int loaded;

static void load(void) {
    // The soname kiln was compiled against: libgit2's ABI changes with its minor version.
    const char *soname = "libgit2.so." LIBGIT2_SOVERSION;
    void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(failure, sizeof failure, "kiln needs %s for git (Debian: apt-get install libgit2-1.5): %s", soname,
                 dlerror());
        return;
    }
#define KILN_GIT2_RESOLVE(result, name, parameters, arguments)                                                        \
    *(void **)(&pointer_##name) = dlsym(library, #name);                                                              \
    if (pointer_##name == NULL) {                                                                                     \
        snprintf(failure, sizeof failure, "%s has no %s: %s", soname, #name, dlerror());                              \
        return;                                                                                                       \
    }
    KILN_GIT2_FUNCTIONS(KILN_GIT2_RESOLVE)
#undef KILN_GIT2_RESOLVE
    loaded = 1;
}

int kiln_git2_load(char *error, size_t size) {
    pthread_once(&once, load);
    if (loaded) return 0;
    snprintf(error, size, "%s", failure);
    return -1;
}

static void unloaded(const char *name) {
    fprintf(stderr, "kiln: internal error: %s called before libgit2 was loaded (kiln_git2_load)\n", name);
    abort();
}

#define KILN_GIT2_DEFINE(result, name, parameters, arguments)                                                         \
    result kiln_##name parameters {                                                                                   \
        if (pointer_##name == NULL) unloaded(#name);                                                                  \
        return pointer_##name arguments;                                                                              \
    }
KILN_GIT2_FUNCTIONS(KILN_GIT2_DEFINE)
#undef KILN_GIT2_DEFINE
