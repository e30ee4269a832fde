#define _GNU_SOURCE
#include "CKilnSystem.h"

#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

int ckiln_gettid(void) { return (int)syscall(SYS_gettid); }

int ckiln_active_processor_count(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
    return CPU_COUNT(&set);
}

int ckiln_lowest_permitted_nice(void) {
    struct rlimit limit;
    if (getrlimit(RLIMIT_NICE, &limit) != 0) return 20;
    rlim_t current = limit.rlim_cur > 40 ? 40 : limit.rlim_cur;
    return 20 - (int)current;
}
