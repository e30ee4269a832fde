import KilnTestSupport

/// A temporary project holding `taskfile` as its `Taskfile.yml`; the caller removes it.
func taskfileProject(_ taskfile: String, prefix: String) throws -> TemporaryDirectory {
    let directory = try TemporaryDirectory(prefix: prefix)
    try directory.write("Taskfile.yml", taskfile)
    return directory
}
