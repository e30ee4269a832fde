import Testing

@testable import KilnHost

/// go-task's `secret: true`: values masked in what kiln prints.
@Suite struct SecretMaskTests {
    @Test func everyOccurrenceIsMaskedTheLongestSecretFirst() {
        let mask = SecretMask(values: ["abc", "abcdef", "", "abc"])
        #expect(mask.values == ["abcdef", "abc"])
        #expect(mask.masking("x abcdef y abc abcabc") == "x ***** y ***** **********")
        #expect(mask.masking("nothing here") == "nothing here")
    }

    @Test func anEmptyMaskChangesNothing() {
        #expect(SecretMask(values: [""]).isEmpty)
        #expect(SecretMask().masking("a b") == "a b")
    }
}
