// SQLite (Debian's libsqlite3-dev): Kiln's build state.
#include <sqlite3.h>
