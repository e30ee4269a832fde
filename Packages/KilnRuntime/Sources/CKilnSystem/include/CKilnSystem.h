// Linux calls that Swift's Glibc module does not expose (they need _GNU_SOURCE, which is
// defined only in the .c file so this header doesn't change how other modules see glibc).
#ifndef CKILN_SYSTEM_H
#define CKILN_SYSTEM_H

/// The kernel id of the calling thread (the unit of nice values on Linux).
int ckiln_gettid(void);

/// The number of CPUs this process may run on (its affinity mask), or 0 if unknown.
int ckiln_active_processor_count(void);

/// The lowest nice value this process may set without CAP_SYS_NICE: 20 − RLIMIT_NICE's soft limit.
int ckiln_lowest_permitted_nice(void);

#endif
