import KilnJobs

/// Runs `body` and returns the code of the ``JobError`` it threw: for engine calls made inside a
/// job's `main` or a completion block, where `#expect(throws:)` can't report to the test.
///
/// - Returns: The code, or `nil` if `body` returned normally or threw something else.
///
/// Threading: any thread.
public func thrownCode(_ body: () throws -> Void) -> JobError.Code? {
    do {
        try body()
        return nil
    } catch {
        return (error as? JobError)?.code
    }
}
