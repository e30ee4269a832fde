// xxHash (Debian's libxxhash-dev): XXH3-128, the content hash of Kiln's build state.
#include <xxhash.h>
