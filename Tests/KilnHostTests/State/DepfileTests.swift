import Testing

@testable import KilnHost

@Suite("Depfiles")
struct DepfileTests {
    @Test("prerequisites are read across continuation lines, once each, without targets")
    func continuationLines() {
        let text = "build/a.o: src/a.c include/a.h \\\n  include/b.h\n"
        #expect(Depfile.prerequisites(text) == ["src/a.c", "include/a.h", "include/b.h"])
    }

    @Test("escaped spaces and $$ are unescaped; -MP's empty rules add nothing new")
    func escapesAndPhonyRules() {
        let text = "out.o: my\\ file.c cost$$.h a.h\n\na.h:\n\ncost$$.h:\n"
        #expect(Depfile.prerequisites(text) == ["my file.c", "cost$.h", "a.h"])
    }

    @Test("CRLF continuations and empty files are handled")
    func crlfAndEmpty() {
        #expect(Depfile.prerequisites("x.o: a.c \\\r\n b.h\r\n").contains("b.h"))
        #expect(Depfile.prerequisites("").isEmpty)
    }
}
