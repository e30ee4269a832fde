import KilnGit
import KilnHost

/// Hashing through git for the project at `root` (the git index's blob ids as the hashes of
/// clean tracked files), or `nil` outside git or with `KILN_GIT_HASHES=0` in the environment
/// (every file is then read and hashed with XXH3).
func trackedContent(root: String) -> GitTrackedContent? {
    guard System.variable("KILN_GIT_HASHES") != "0" else { return nil }
    return GitTrackedContent(projectRoot: root)
}
