// libgit2 from Debian (libgit2-dev 1.5).
#include <git2.h>
