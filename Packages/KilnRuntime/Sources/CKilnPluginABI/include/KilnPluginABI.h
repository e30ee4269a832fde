#ifndef KILN_PLUGIN_ABI_H
#define KILN_PLUGIN_ABI_H

#include <stdint.h>

/// The version of the binary interface between the kiln host and its task plugins. It is a
/// preprocessor constant on purpose: a plugin reads it when it is *compiled*, so the number a
/// plugin reports is the one it was built against, whatever library is loaded beside it at run
/// time (a Swift constant would be read from the loaded library in debug builds).
///
/// Bump it whenever KilnJobs or KilnPluginAPI change in a way that breaks plugins built before.
#ifndef KILN_PLUGIN_ABI_VERSION
#define KILN_PLUGIN_ABI_VERSION 1
#endif

/// KILN_PLUGIN_ABI_VERSION as the code calling it was compiled: `static inline`, so the body is
/// compiled into the plugin itself, never looked up in a library at run time. A plugin sets
/// `abi_version` from it.
static inline uint32_t kiln_plugin_abi_version(void) { return KILN_PLUGIN_ABI_VERSION; }

/// What a plugin's entry point fills in. The host zeroes it, calls the entry point, and reads
/// `abi_version` before anything else; only when it matches does it call `register_kinds`.
typedef struct KilnPluginEntry {
    /// Set by the plugin to kiln_plugin_abi_version(): KILN_PLUGIN_ABI_VERSION as compiled into it.
    uint32_t abi_version;
    /// Set by the plugin: registers its task kinds with the registrar the host passes (an opaque
    /// pointer the plugin hands to `PluginRegistrar.borrow`).
    void (*_Nullable register_kinds)(void *_Nonnull registrar);
} KilnPluginEntry;

/// The one C symbol every plugin exports.
#define KILN_PLUGIN_ENTRY_SYMBOL "kiln_plugin_entry"

#endif
