#define _GNU_SOURCE
#include "CKilnSystem.h"

#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

int ckiln_gettid(void) { return (int)syscall(SYS_gettid); }

int ckiln_active_processor_count(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
    return CPU_COUNT(&set);
}
