#include "CKilnZlib.h"

int kiln_gz_write_all(gzFile file, const void *bytes, unsigned long length) {
    const unsigned char *cursor = bytes;
    while (length > 0) {
        unsigned chunk = length > (1u << 30) ? (1u << 30) : (unsigned)length;
        int written = gzwrite(file, cursor, chunk);
        if (written <= 0) {
            int error = Z_ERRNO;
            gzerror(file, &error);
            return error == Z_OK ? Z_ERRNO : error;
        }
        cursor += written;
        length -= (unsigned long)written;
    }
    return 0;
}
