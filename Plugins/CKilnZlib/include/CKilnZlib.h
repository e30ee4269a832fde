#ifndef CKILN_ZLIB_H
#define CKILN_ZLIB_H
// zlib for the archive and compress plugins (Debian: zlib1g-dev).
#include <zlib.h>

/// Writes `length` bytes to a gzip stream, retrying partial writes; returns 0 or the zlib error.
int kiln_gz_write_all(gzFile file, const void *bytes, unsigned long length);
#endif
