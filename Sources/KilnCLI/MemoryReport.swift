import KilnPaths

#if canImport(Glibc)
    import Glibc
#endif

/// With `KILN_DEBUG=memory`, what a run's memory came to, printed to standard error when it ends:
/// `kiln: memory: peak RSS N KiB; malloc arenas K`. The arenas are glibc's: the launcher allows
/// one, and more than one means a thread allocated before it said so.
///
/// Threading: call from any thread; it reads the process's counters, which other threads may be
/// changing, so the figures are those of a moment.
enum MemoryReport {
    /// The line's text, after `kiln: memory: `.
    static func summary() -> String {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let arenas = mallocArenas().map(String.init) ?? "unknown"
        return "peak RSS \(usage.ru_maxrss) KiB; malloc arenas \(arenas)"
    }

    /// How many arenas glibc's malloc has: the `<heap nr=` elements of `malloc_info`, which
    /// <malloc.h> declares and Glibc's module doesn't import (a nil handle is RTLD_DEFAULT).
    static func mallocArenas() -> Int? {
        guard let symbol = dlsym(nil, "malloc_info") else { return nil }
        let mallocInfo = unsafeBitCast(symbol, to: (@convention(c) (Int32, UnsafeMutablePointer<FILE>?) -> Int32).self)
        var buffer: UnsafeMutablePointer<CChar>? = nil
        var size = 0
        guard let stream = open_memstream(&buffer, &size) else { return nil }
        let status = mallocInfo(0, stream)
        fclose(stream)
        defer { free(buffer) }
        guard status == 0, let buffer else { return nil }
        let text = String(cString: buffer)
        return text.splitting(atText: "<heap nr=").count - 1
    }
}
