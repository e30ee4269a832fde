import CYAML

/// A YAML document as a small tree, read with libyaml's event parser: scalars keep their text,
/// style and position; maps keep their order. Anchors and aliases are resolved, and `<<` merge
/// keys are applied. Every value is text: a Taskfile's schema decides what a scalar means.
///
/// Threading: a value type; safe to pass between threads.
enum YAMLNode: Sendable {
    /// A scalar, as written (quotes removed, escapes resolved).
    case scalar(YAMLScalar)
    /// A map, in the order written.
    case mapping([(key: YAMLNode, value: YAMLNode)], YAMLMark)
    /// A sequence.
    case sequence([YAMLNode], YAMLMark)

    /// Where the node starts.
    var mark: YAMLMark {
        switch self {
        case .scalar(let scalar): scalar.mark
        case .mapping(_, let mark), .sequence(_, let mark): mark
        }
    }

    /// The scalar, if this is one.
    var scalar: YAMLScalar? {
        if case .scalar(let scalar) = self { return scalar }
        return nil
    }

    /// The text of a scalar.
    var string: String? { scalar?.string }

    /// Whether this is YAML's null: a plain `~`, `null` (`Null`, `NULL`) or empty scalar.
    var isNull: Bool {
        guard let scalar, scalar.style == .plain else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    /// The entries of a map.
    var mapping: [(key: YAMLNode, value: YAMLNode)]? {
        if case .mapping(let entries, _) = self { return entries }
        return nil
    }

    /// The items of a sequence.
    var sequence: [YAMLNode]? {
        if case .sequence(let items, _) = self { return items }
        return nil
    }

    /// The value of `key` in a map.
    subscript(key: String) -> YAMLNode? {
        mapping?.first { $0.key.string == key }?.value
    }
}

/// A position in a YAML text, 1-based.
///
/// Threading: a value type.
struct YAMLMark: Sendable, Hashable {
    var line: Int32
    var column: Int32
}

/// A scalar's text, how it was quoted, and where it is.
///
/// Threading: a value type.
struct YAMLScalar: Sendable {
    /// How a scalar was written.
    enum Style: Sendable {
        case plain, singleQuoted, doubleQuoted, literal, folded
    }

    var string: String
    var style: Style
    var mark: YAMLMark
}

/// A YAML syntax error: libyaml's problem and its position.
///
/// Threading: a value type.
struct YAMLSyntaxError: Error, Sendable {
    var message: String
    var mark: YAMLMark
}

extension YAMLNode {
    /// Parses the first document of `text`; `nil` for an empty one.
    ///
    /// - Throws: ``YAMLSyntaxError``.
    /// How much of a document to build.
    enum Mode {
        /// Everything.
        case whole
        /// Everything but the value of the top-level key `key`, which becomes an empty map placeholder
        /// (if it is a map): a Taskfile's first pass, without its tasks.
        case skipping(String)
        /// Everything, but each entry of the top-level map `key` is handed to `handler` as soon as it
        /// is complete and not kept: a Taskfile's second pass, one task in memory at a time.
        case streaming(String, handler: (_ key: YAMLNode, _ value: YAMLNode) -> Void)
    }

    static func parse(_ text: String) throws(YAMLSyntaxError) -> YAMLNode? {
        try parse(text, mode: .whole)
    }

    static func parse(_ text: String, mode: Mode) throws(YAMLSyntaxError) -> YAMLNode? {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else {
            throw YAMLSyntaxError(message: "can't initialize the YAML parser", mark: YAMLMark(line: 1, column: 1))
        }
        defer { yaml_parser_delete(&parser) }
        var text = text
        text.makeContiguousUTF8()
        // Parse straight from the string's own storage: no copy of a large Taskfile.
        let result = text.utf8.withContiguousStorageIfAvailable { buffer -> Result<YAMLNode?, YAMLSyntaxError> in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var builder = Builder(mode: mode)
            do throws(YAMLSyntaxError) {
                return .success(try builder.run(&parser))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let node): return node
        case .failure(let error): throw error
        case nil: return nil
        }
    }

    /// The deepest nesting of lists and maps a Taskfile may have. Hardened loaders limit it
    /// too: every walk of a deeper tree risks the stack, and no Taskfile needs it.
    static let maximumDepth = 256
    /// How many nodes aliases may add to a document, expanded, beyond ``aliasRatio`` times the
    /// nodes written: `&a [x, x]` then `&b [*a, *a]` … doubles at each step (an alias bomb).
    static let aliasAllowance = 100_000
    static let aliasRatio = 10

    private struct Builder {
        /// An open container. A class, so appending to it never copies what it holds.
        final class Frame {
            let isMapping: Bool
            let mark: YAMLMark
            let anchor: String?
            /// The nodes its children stand for with every alias expanded.
            var expandedSize = 0
            var entries: [(key: YAMLNode, value: YAMLNode)] = []
            var items: [YAMLNode] = []
            var pendingKey: YAMLNode?
            /// Keys that came from `<<` merges: the map's own key of the same name replaces them.
            var mergedKeys: Set<String> = []

            init(isMapping: Bool, mark: YAMLMark, anchor: String?) {
                self.isMapping = isMapping
                self.mark = mark
                self.anchor = anchor
            }
        }
        var stack: [Frame] = []
        var anchors: [String: (node: YAMLNode, expandedSize: Int)] = [:]
        /// Nodes written in the document, and nodes its aliases added, expanded.
        var writtenNodes = 0
        var aliasedNodes = 0
        var root: YAMLNode?
        var done = false
        let mode: Mode
        /// While above zero, events are inside a skipped subtree and only nesting is followed.
        var skipDepth = 0

        init(mode: Mode) {
            self.mode = mode
        }

        /// Whether a value starting now is the value of the top-level key `key`.
        func startsValue(ofTopLevelKey key: String) -> Bool {
            stack.count == 1 && stack[0].isMapping && stack[0].pendingKey?.string == key
        }

        /// Whether the open container is the top-level map whose entries stream.
        var inStreamedMap: Bool {
            guard case .streaming(let key, _) = mode else { return false }
            return stack.count == 2 && stack[1].isMapping && stack[0].pendingKey?.string == key
        }

        mutating func run(_ parser: inout yaml_parser_t) throws(YAMLSyntaxError) -> YAMLNode? {
            var event = yaml_event_t()
            while !done {
                guard yaml_parser_parse(&parser, &event) == 1 else {
                    let problem = parser.problem.map { String(cString: $0) } ?? "malformed YAML"
                    var message = problem
                    if let context = parser.context {
                        message = "\(problem) (\(String(cString: context)) at line \(parser.context_mark.line + 1))"
                    }
                    throw YAMLSyntaxError(
                        message: message,
                        mark: YAMLMark(
                            line: Int32(parser.problem_mark.line + 1),
                            column: Int32(parser.problem_mark.column + 1)
                        )
                    )
                }
                defer { yaml_event_delete(&event) }
                let mark = YAMLMark(line: Int32(event.start_mark.line + 1), column: Int32(event.start_mark.column + 1))
                if skipDepth > 0 {
                    switch event.type {
                    case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
                        skipDepth += 1
                        guard stack.count + skipDepth <= YAMLNode.maximumDepth else {
                            throw YAMLSyntaxError(
                                message:
                                    "lists and maps nested more than \(YAMLNode.maximumDepth) deep; flatten this value",
                                mark: mark
                            )
                        }
                    case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT: skipDepth -= 1
                    default: break
                    }
                    continue
                }
                if case .skipping(let key) = mode, event.type == YAML_MAPPING_START_EVENT,
                    startsValue(ofTopLevelKey: key)
                {
                    skipDepth = 1
                    add(.mapping([], mark), expandedSize: 1)
                    continue
                }
                switch event.type {
                case YAML_SCALAR_EVENT:
                    let scalar = event.data.scalar
                    let text =
                        scalar.value.map { value in
                            String(decoding: UnsafeBufferPointer(start: value, count: scalar.length), as: UTF8.self)
                        } ?? ""
                    let style: YAMLScalar.Style
                    switch scalar.style {
                    case YAML_SINGLE_QUOTED_SCALAR_STYLE: style = .singleQuoted
                    case YAML_DOUBLE_QUOTED_SCALAR_STYLE: style = .doubleQuoted
                    case YAML_LITERAL_SCALAR_STYLE: style = .literal
                    case YAML_FOLDED_SCALAR_STYLE: style = .folded
                    default: style = .plain
                    }
                    let node = YAMLNode.scalar(YAMLScalar(string: text, style: style, mark: mark))
                    if let anchor = scalar.anchor { anchors[String(cString: anchor)] = (node, 1) }
                    writtenNodes += 1
                    add(node, expandedSize: 1)
                case YAML_SEQUENCE_START_EVENT, YAML_MAPPING_START_EVENT:
                    guard stack.count < YAMLNode.maximumDepth else {
                        throw YAMLSyntaxError(
                            message:
                                "lists and maps nested more than \(YAMLNode.maximumDepth) deep; flatten this value",
                            mark: mark
                        )
                    }
                    writtenNodes += 1
                    let isMapping = event.type == YAML_MAPPING_START_EVENT
                    let anchor = isMapping ? event.data.mapping_start.anchor : event.data.sequence_start.anchor
                    stack.append(Frame(isMapping: isMapping, mark: mark, anchor: anchor.map { String(cString: $0) }))
                case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                    let frame = stack.removeLast()
                    let node: YAMLNode =
                        frame.isMapping ? .mapping(frame.entries, frame.mark) : .sequence(frame.items, frame.mark)
                    if let anchor = frame.anchor { anchors[anchor] = (node, frame.expandedSize + 1) }
                    add(node, expandedSize: frame.expandedSize + 1)
                case YAML_ALIAS_EVENT:
                    let name = event.data.alias.anchor.map { String(cString: $0) } ?? ""
                    guard let (node, size) = anchors[name] else {
                        // Skipping a subtree, its anchors are never read: an alias after it to one
                        // of them can't be given its value here (and the pass that builds the
                        // subtree keeps only its entries). Said, not left empty.
                        if case .skipping(let key) = mode {
                            throw YAMLSyntaxError(
                                message:
                                    "unknown alias '*\(name)' (if its anchor is inside '\(key):': a file this large reads '\(key):' apart from the rest, so an anchor there can't be used outside it; move the anchor before '\(key):')",
                                mark: mark
                            )
                        }
                        throw YAMLSyntaxError(message: "unknown alias '*\(name)'", mark: mark)
                    }
                    // Shared, not copied, here — but whatever reads the tree walks it expanded.
                    aliasedNodes += size
                    let allowed = YAMLNode.aliasAllowance + YAMLNode.aliasRatio * writtenNodes
                    guard aliasedNodes <= allowed else {
                        throw YAMLSyntaxError(
                            message:
                                "aliases expand to more than \(allowed) nodes for \(writtenNodes) written (an alias bomb?); write the values out",
                            mark: mark
                        )
                    }
                    add(node, expandedSize: size)
                case YAML_DOCUMENT_END_EVENT, YAML_STREAM_END_EVENT:
                    done = true
                default:
                    break
                }
            }
            return root
        }

        /// Adds a finished node (standing for `expandedSize` nodes, aliases expanded) to the open
        /// container, or makes it the root.
        mutating func add(_ node: YAMLNode, expandedSize: Int) {
            guard let top = stack.last else {
                root = node
                return
            }
            top.expandedSize += expandedSize
            guard top.isMapping else {
                top.items.append(node)
                return
            }
            guard let key = top.pendingKey else {
                top.pendingKey = node
                return
            }
            top.pendingKey = nil
            if case .streaming(_, let handler) = mode, inStreamedMap {
                if key.string == "<<", key.scalar?.style == .plain {
                    for source in node.sequence ?? [node] {
                        for entry in source.mapping ?? [] { handler(entry.key, entry.value) }
                    }
                } else {
                    handler(key, node)
                }
                return
            }
            if key.string == "<<", key.scalar?.style == .plain {
                // Merge key: the referenced maps' entries, unless this map sets them itself.
                for source in node.sequence ?? [node] {
                    for entry in source.mapping ?? []
                    where !top.entries.contains(where: { $0.key.string == entry.key.string }) {
                        top.entries.append(entry)
                        if let name = entry.key.string { top.mergedKeys.insert(name) }
                    }
                }
            } else if let name = key.string, top.mergedKeys.remove(name) != nil,
                let index = top.entries.firstIndex(where: { $0.key.string == name })
            {
                top.entries[index] = (key, node)
            } else {
                top.entries.append((key, node))
            }
        }
    }
}
