import KilnPaths
import KilnPluginAPI

/// go-task's task settings beyond what a job is made of: how a task is named, shown, guarded
/// and when it runs on this machine.
///
/// Threading: a value type; safe to pass between threads.
public struct TaskOptions: Sendable, Hashable {
    /// `summary:` — the long description `kiln list --summary TASK` prints.
    public var longSummary: String?
    /// `aliases:` — other names the task answers to on the command line and in `deps`.
    public var aliases: [String] = []
    /// `internal: true` — callable from other tasks only; hidden from `kiln list`.
    public var isInternal = false
    /// `label:` — the name shown for the task's jobs (a template).
    public var label: String?
    /// `silent: true` — go-task stops echoing commands; kiln never echoes them, so it changes nothing.
    public var isSilent = false
    /// `ignore_error: true` — a failing command doesn't fail the task; the next one runs.
    public var ignoresError = false
    /// `interactive: true` — the commands get kiln's terminal: its standard input, output and
    /// error (not captured), and the foreground when kiln has it. One such job runs at a time,
    /// and the console holds the other jobs' reports until it ends.
    public var isInteractive = false
    /// Made for a `- task:` call with `ignore_error: true`: a job of it that fails is reported,
    /// and its caller goes on as if it had succeeded (go-task's rule); the run doesn't stop or
    /// fail for it. A failure of what it depends on still does.
    public var failureIgnored = false
    /// Made for a `- task:` call or a dependency with `timeout:`: how long the task's commands
    /// may run, all together, before the one running is stopped and the task fails (exit code
    /// 124). Its own dependencies aren't bounded by it: kiln shares them between callers.
    public var timeout: GoDuration?
    /// Set on the piece, named as the task, that ends a task with deferred calls
    /// (`defer: {task: …}`): the name of the piece that runs its commands (`T #1`). When that
    /// piece has ended, however it ended, the calls it reached run — the last reached first —
    /// and this piece ends as that one did. Its ``TaskDefinition/calls`` are the called tasks,
    /// in the order written.
    public var deferralBody: String?
    /// Made of a `defer:` command written before a `- task:` call, and called when its task
    /// ends (see ``deferralBody``): its command sees the exit status of the task's command that
    /// failed as `{{.EXIT_CODE}}`.
    public var isDeferredCommand = false
    /// Set on the first piece of a task whose `cmds` call other tasks and that declares
    /// `sources:`, `generates:` or `status:` — the task's **guard**. go-task decides such a task
    /// whole, when it starts: up to date, none of it runs, its calls included. So the guard's
    /// verdict is the task's: the other pieces follow it (``guardedBy``), and its record is
    /// written only once the task's last piece has succeeded (``recordsGuard``). This is what the
    /// other pieces run, as written — their commands, and `\u{0}task NAME` for each call — which
    /// the guard's signature covers: editing any of them makes the task run again. Empty for
    /// every other task.
    public var guardedWork: [String] {
        get { rare?.values.guardedWork ?? [] }
        set { changeRare { $0.guardedWork = newValue } }
    }
    /// Set on the pieces after a guard (``guardedWork``): the guard's name, whose verdict they
    /// take instead of their own. When it is up to date, they are, and the calls between them
    /// are skipped; when it runs, they run.
    public var guardedBy: String? {
        get { rare?.values.guardedBy }
        set { changeRare { $0.guardedBy = newValue } }
    }
    /// Set on the last of the pieces that follow a guard (``guardedBy``): when it succeeds, the
    /// task has run whole, and the guard's record (its sources, its outputs, made by any piece
    /// or call) is written.
    public var recordsGuard: Bool {
        get { rare?.values.recordsGuard ?? false }
        set { changeRare { $0.recordsGuard = newValue } }
    }
    /// Set on a step between calls (see ``TaskDefinition/calls``) whose call has an `if:` that is
    /// a shell test, rendered in the caller's scope: it runs when the call is reached — the
    /// step before it has run — in the task's directory and environment, as go-task runs it;
    /// when it fails, the call isn't made (the called task is skipped, as up to date) and the
    /// step goes on.
    public var callTest: Located<String>? {
        get { rare?.values.callTest }
        set { changeRare { $0.callTest = newValue } }
    }
    /// `if:` on the task, when it is a shell test (rendered with the task's variables): run when
    /// the task is reached, before its dependencies; when it fails, none of the task runs. The
    /// loader makes such a task a call of its body with this test (see
    /// ``TaskDefinition/splitForCondition(bodyName:)``): set only until it does.
    public var taskTest: Located<String>? {
        get { rare?.values.taskTest }
        set { changeRare { $0.taskTest = newValue } }
    }
    /// Set on a task made of a task whose `if:` is a shell test: the name of its body (`T [if]`),
    /// which it calls when the test succeeds.
    public var conditionalBody: String? {
        get { rare?.values.conditionalBody }
        set { changeRare { $0.conditionalBody = newValue } }
    }
    /// `watch: true` — running the task from the command line watches its sources and runs it
    /// again when they change, as `kiln run --watch` does.
    public var watches: Bool {
        get { rare?.values.watches ?? false }
        set { changeRare { $0.watches = newValue } }
    }
    /// The settings few tasks have (the pieces kiln cuts tasks into, conditions, watching),
    /// behind one reference: a copy of the options, which loading and planning make often,
    /// retains one object for all of them. `nil`: all at their defaults.
    private var rare: RareOptionsBox?

    /// The rarely set settings together (for the Taskfile cache): `nil` when all are at their
    /// defaults.
    var rareOptions: RareOptions? {
        get { rare?.values }
        set { rare = newValue.flatMap { $0 == RareOptions() ? nil : RareOptionsBox($0) } }
    }

    /// ``rare``'s values, changed by `change`; no box when they are the defaults again.
    private mutating func changeRare(_ change: (inout RareOptions) -> Void) {
        var values = rare?.values ?? RareOptions()
        change(&values)
        rare = values == RareOptions() ? nil : RareOptionsBox(values)
    }

    /// `platforms:` — the operating systems and architectures (`linux`, `amd64`, `linux/arm64`) the
    /// task runs on; elsewhere it is skipped with its dependencies. `nil`: everywhere.
    public var platforms: [String]?
    /// `prompt:` — questions asked before the task runs (`--yes` answers them).
    public var prompts: [String] = []
    /// `preconditions:` — shell tests run before the commands; the first that fails fails the task
    /// with its message.
    public var preconditions: [Precondition] = []
    /// `method: none` — the task runs every time, whatever its sources say.
    public var runsEveryTime = false
    /// Settings of each of `cmds`, in order; empty when every command has the defaults.
    public var commandOptions: [CommandOptions] = []
    /// `requires: {vars: …}` — variables that must be set for the task to run, some with the
    /// values they may take.
    public var requiredVariables: [RequiredVariable] = []
    /// The task, as the Taskfile names it, that this definition is a piece of: an instance of it
    /// (a dependency or a `- task:` call with `vars:`), or a step of its `cmds` between two
    /// `- task:` calls. `nil` for the tasks the Taskfile defines. Such pieces aren't listed and
    /// can't be run by name; `{{.TASK}}` is this name.
    public var partOf: String?
    /// `status:` — shell tests (templates, rendered like commands): when all of them succeed, the
    /// task is up to date (and, with `sources`/`generates`, only when those say so too).
    public var statusChecks: [Located<String>] = []
    /// Its own dynamic variables weren't run (the load wasn't for it, see
    /// ``TaskfileContext/dynamicScope``): its values are placeholders, and planning it is refused.
    /// Never in the Taskfile cache (such a load isn't cached).
    public var dynamicVariablesSkipped = false
    /// `set:` and `shopt:` of the task, with its file's (each command adds its own).
    public var shellOptions = ShellOptions()
    /// `if:` rendered to `false` when the Taskfile loaded: the task is skipped with its
    /// dependencies, as on another platform.
    public var conditionHolds = true
    /// go-task's fingerprint variable that the task's commands, status or preconditions name:
    /// worked out for each job from its sources (`nil`: none is named).
    public var fingerprint: Fingerprint?

    /// go-task's `{{.CHECKSUM}}` and `{{.TIMESTAMP}}`.
    ///
    /// Threading: a value type; safe to pass between threads.
    public enum Fingerprint: UInt8, Sendable, Hashable {
        /// `CHECKSUM`: a digest of the sources' paths and contents (kiln's XXH3-128, in hex; go-task's
        /// value is its own and differs).
        case checksum = 1
        /// `TIMESTAMP` (`method: timestamp`): when the newest source was last modified.
        case timestamp = 2

        /// The variable's name.
        public var variable: String { self == .checksum ? "CHECKSUM" : "TIMESTAMP" }
    }

    /// Creates the defaults.
    public init() {}

    /// What a task keeps when it forwards to the same task under another name (a file included
    /// twice): how it is named and shown, not what it runs or checks.
    var forwarding: TaskOptions {
        var kept = TaskOptions()
        kept.longSummary = longSummary
        kept.aliases = aliases
        kept.isInternal = isInternal
        kept.label = label
        kept.partOf = partOf
        return kept
    }

    /// The defaults.
    public static let defaults = TaskOptions()

    /// A precondition: a shell test and the message shown when it fails.
    ///
    /// Threading: a value type; safe to pass between threads.
    public struct Precondition: Sendable, Hashable {
        /// The test (a template, rendered like a command).
        public var test: Located<String>
        /// What to say when it fails (go-task's `msg:`); the test itself when `nil`.
        public var message: String?
    }

    /// What loading found wrong with the task's own values — a dynamic variable whose command
    /// failed, a `dir:` or `sources:` template that can't be rendered — reported when a run plans
    /// the task, not when the Taskfile loads: `kiln list` works, and so do the other tasks (as in
    /// go-task, which evaluates a task's variables when it runs it).
    public var deferredErrors: [DeferredError] = []

    /// A mistake reported when the task is planned.
    ///
    /// Threading: a value type; safe to pass between threads.
    public struct DeferredError: Sendable, Hashable {
        /// `invalid-template`, `invalid-value`, `unknown-task`, `unsupported`, `unknown-key` or `wrong-type`.
        public var code: String
        /// What is wrong.
        public var message: String
        /// Where.
        public var location: SourceLocation?

        /// As a Taskfile error.
        public var error: TaskfileError {
            TaskfileError(TaskfileError.Code.deferrable[code] ?? .invalidValue, message, at: location)
        }
    }

    /// A variable the task requires.
    ///
    /// Threading: a value type; safe to pass between threads.
    public struct RequiredVariable: Sendable, Hashable {
        /// Its name.
        public var name: String
        /// The values it may take (`enum:`); `nil`: any.
        public var allowed: [String]?
        /// Where it is required.
        public var location: SourceLocation
    }

    /// Whether `platforms` lets something run on this machine (go-task's rule: each entry names an
    /// OS, an architecture, or `OS/ARCH`).
    public static func allows(_ platforms: [String]?) -> Bool {
        guard let platforms else { return true }
        let os = "linux"
        let architecture = TemplateFunctions.standard["ARCH"].flatMap { try? $0.call([]) }?.stringValue ?? ""
        return platforms.contains { entry in
            let parts = entry.split(separator: "/", maxSplits: 1).map(String.init)
            if parts.count == 2 { return parts[0] == os && parts[1] == architecture }
            return entry == os || entry == architecture
        }
    }

    /// The answer of a rendered `if:` that needs no shell: `true` for `true` or nothing, `false`
    /// for `false` (white space around aside) — what go-task's shell answers for that text; `nil`
    /// for anything else, a test to run. The one rule for `if:` on tasks, calls and commands.
    public static func constantCondition(_ rendered: String) -> Bool? {
        var text = Substring(rendered)
        while let first = text.first, first.isWhitespace { text.removeFirst() }
        while let last = text.last, last.isWhitespace { text.removeLast() }
        switch text {
        case "", "true": return true
        case "false": return false
        default: return nil
        }
    }

    /// The operating systems and architectures go-task accepts in `platforms:`.
    static let knownSystems: Set<String> = [
        "aix", "android", "darwin", "dragonfly", "freebsd", "illumos", "ios", "js", "linux", "netbsd", "openbsd",
        "plan9",
        "solaris", "wasip1", "windows",
    ]
    static let knownArchitectures: Set<String> = [
        "386", "amd64", "arm", "arm64", "loong64", "mips", "mips64", "mips64le", "mipsle", "ppc64", "ppc64le",
        "riscv64",
        "s390x", "wasm",
    ]
}

/// A task's ``TaskOptions`` when they aren't the defaults, shared by reference.
///
/// Threading: immutable; safe to share between threads.
final class TaskOptionsBox: Sendable {
    let options: TaskOptions
    init(_ options: TaskOptions) { self.options = options }
}

/// go-task's `for:` on a command: what it iterates over.
///
/// Threading: a value type; safe to pass between threads.
public struct CommandLoop: Sendable, Hashable {
    /// The items.
    ///
    /// Threading: a value type; safe to pass between threads.
    public enum Items: Sendable, Hashable {
        /// `for: [a, b]`.
        case list([String])
        /// `for: {var: NAME, split: SEP}`: a list variable's items, or a text variable split on
        /// `SEP` (on white space without one).
        case variable(String, split: String?)
        /// `for: sources` / `for: generates`: the files the task's patterns match.
        case sources
        case generates
        /// `for: {matrix: {OS: [linux, darwin], ARCH: [amd64]}}`: every combination, the first key
        /// varying slowest; the item is a map.
        case matrix([(key: String, values: [String])])

        /// Equal when both are the same kind with equal lists (a matrix: equal keys and values, in order).
        public static func == (a: Items, b: Items) -> Bool {
            switch (a, b) {
            case (.list(let x), .list(let y)): x == y
            case (.variable(let x, let s), .variable(let y, let t)): x == y && s == t
            case (.sources, .sources), (.generates, .generates): true
            case (.matrix(let x), .matrix(let y)): x.map(\.key) == y.map(\.key) && x.map(\.values) == y.map(\.values)
            default: false
            }
        }

        /// Hashes what `==` compares.
        public func hash(into hasher: inout Hasher) {
            switch self {
            case .list(let items): hasher.combine(items)
            case .variable(let name, let split):
                hasher.combine(name)
                hasher.combine(split)
            case .sources: hasher.combine(1)
            case .generates: hasher.combine(2)
            case .matrix(let entries):
                for entry in entries {
                    hasher.combine(entry.key)
                    hasher.combine(entry.values)
                }
            }
        }
    }

    /// What it iterates over.
    public var items: Items
    /// `as:` — the variable holding the item (`ITEM`).
    public var name: String = "ITEM"
}

/// go-task's settings of one command (`- cmd: …` with `silent:`, `ignore_error:`, `platforms:`).
///
/// Threading: a value type; safe to pass between threads.
public struct CommandOptions: Sendable, Hashable {
    /// `silent:` — changes nothing in kiln, which doesn't echo commands.
    public var isSilent = false
    /// `ignore_error:` — the command's failure doesn't fail the task.
    public var ignoresError = false
    /// `platforms:` — where the command runs; skipped elsewhere.
    public var platforms: [String]?
    /// `for:` — the command runs once per item, with the item in `{{.ITEM}}` (or `as:`'s name).
    public var loop: CommandLoop?
    /// `set:` and `shopt:` of the command, with its task's and file's: what it runs under.
    public var shellOptions = ShellOptions()
    /// `if:` — a test (a template) run before the command; the command is skipped when it fails.
    public var condition: Located<String>?
    /// `defer:` — the command runs when the task's other commands have ended, even after one
    /// failed, in the reverse order of the `defer:`s reached; `{{.EXIT_CODE}}` is the failed
    /// command's exit status.
    public var isDeferred = false
    /// `timeout:` — how long the command (with its `if:` test) may run before it is stopped and
    /// fails with exit code 124 (a deferred command's is stopped and ignored).
    public var timeout: GoDuration?
    /// `defer: {task: …}` — not a command but the place of the task's k-th deferred call: the
    /// call is made, when the task ends, only if its commands got this far (see
    /// ``TaskOptions/deferralBody``).
    public var deferredCall: Int?

    /// Creates the defaults.
    public init(isSilent: Bool = false, ignoresError: Bool = false, platforms: [String]? = nil) {
        self.isSilent = isSilent
        self.ignoresError = ignoresError
        self.platforms = platforms
    }
}

extension CommandLoop {
    /// The items when they don't depend on files (a list, a variable, a matrix), as a `for:` on a
    /// `- task:` call or a dependency needs them when the Taskfile loads; `nil` for `sources` and
    /// `generates`.
    func staticItems(variables: [String: TemplateValue]) -> [TemplateValue]? {
        switch items {
        case .list(let values): values.map(TemplateValue.string)
        case .variable(let name, let split): Self.items(ofVariable: variables[name], split: split)
        case .matrix(let rows): Self.combinations(of: rows)
        case .sources, .generates: nil
        }
    }

    /// `for: {var: NAME, split: SEP}`: a list variable's items; a text split on `SEP`, or on white
    /// space without one; nothing for a variable that isn't set; any other value as one item.
    static func items(ofVariable value: TemplateValue?, split: String?) -> [TemplateValue] {
        switch value {
        case .list(let items): return items
        case .string(let text):
            if let split, !split.isEmpty {
                return text.splitting(atText: split).map { .string(String($0)) }
            }
            return text.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }).map {
                .string(String($0))
            }
        case nil, .missing, .null: return []
        case let value?: return [value]
        }
    }

    /// `for: {matrix: …}`: every combination as a map, the first key varying slowest.
    static func combinations(of rows: [(key: String, values: [String])]) -> [TemplateValue] {
        var combinations: [[String: TemplateValue]] = [[:]]
        for row in rows {
            combinations = combinations.flatMap { partial in
                row.values.map { value in
                    var next = partial
                    next[row.key] = .string(value)
                    return next
                }
            }
        }
        return combinations.map(TemplateValue.map)
    }
}

/// go-task's `set:` (`[e, u, pipefail]`: `set -e`, `set -u`, `set -o pipefail`) and `shopt:`
/// (`[globstar]`: `shopt -s globstar`), at the file, task and command level: the options a
/// command runs under, joined in that order without repeats (go-task's rule).
///
/// Threading: a value type; safe to pass between threads.
public struct ShellOptions: Sendable, Hashable {
    /// `set:` names.
    public var posix: [String] = []
    /// `shopt:` names.
    public var bash: [String] = []

    /// No options.
    public init() {}

    /// These options, then `more`'s that aren't among them.
    func adding(_ more: ShellOptions) -> ShellOptions {
        var joined = self
        for name in more.posix where !joined.posix.contains(name) { joined.posix.append(name) }
        for name in more.bash where !joined.bash.contains(name) { joined.bash.append(name) }
        return joined
    }

    /// What goes before a command so it runs under them: `set -e; shopt -s globstar; ` (names
    /// are checked when the Taskfile loads: letters, digits and `_` only). Empty without options.
    var prefix: String {
        var parts = posix.map { $0.count == 1 ? "set -\($0)" : "set -o \($0)" }
        parts += bash.map { "shopt -s \($0)" }
        return parts.isEmpty ? "" : parts.joined(separator: "; ") + "; "
    }

    /// Whether `name` can be an option's name (so it can't smuggle a command into the shell).
    static func isValidName(_ name: String) -> Bool {
        !name.isEmpty
            && name.utf8.allSatisfy {
                $0 == UInt8(ascii: "_") || ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A || $0 >= 0x30 && $0 <= 0x39
            }
    }
}

/// The values behind ``TaskOptions``' rarely set properties (see there).
///
/// Threading: a value type.
struct RareOptions: Sendable, Hashable {
    var guardedWork: [String] = []
    var guardedBy: String?
    var recordsGuard = false
    var callTest: Located<String>?
    var taskTest: Located<String>?
    var conditionalBody: String?
    var watches = false
}

/// ``RareOptions`` behind a reference, compared and hashed by its values.
///
/// Threading: immutable; any thread.
final class RareOptionsBox: Sendable, Hashable {
    let values: RareOptions

    init(_ values: RareOptions) { self.values = values }

    static func == (left: RareOptionsBox, right: RareOptionsBox) -> Bool {
        left === right || left.values == right.values
    }

    func hash(into hasher: inout Hasher) { hasher.combine(values) }
}
