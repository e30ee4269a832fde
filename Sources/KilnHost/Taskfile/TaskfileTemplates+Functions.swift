import KilnPaths
import KilnPluginAPI

extension TaskfileTemplates {
    /// The functions of go-task's that need what the host has: a YAML parser (`fromYaml`,
    /// `mustFromYaml`) and digests (`sha1sum`, `sha256sum`, as slim-sprig computes them: the
    /// lowercase hex of the text's UTF-8 bytes).
    static let hostFunctions: [String: TemplateFunction] = {
        var table: [String: TemplateFunction] = [:]
        table["fromYaml"] = TemplateFunction(arguments: 1) { arguments in
            // go-task's: a document that doesn't parse gives nothing.
            (try? fromYAML(arguments[0])) ?? .null
        }
        table["mustFromYaml"] = TemplateFunction(arguments: 1) { arguments throws(TemplateFunctionError) in
            try fromYAML(arguments[0])
        }
        // SHA-256 is swift-crypto's, in the remote library: loaded the first time a template asks.
        table["sha256sum"] = TemplateFunction(arguments: 1) { arguments throws(TemplateFunctionError) in
            switch RemoteLibrary.keysOnlyClient() {
            case .success(let client): return .string(client.digest(of: Array(text(arguments[0]).utf8)).hash)
            case .failure(let failure): throw TemplateFunctionError("sha256sum: \(failure.message)")
            }
        }
        table["sha1sum"] = TemplateFunction(arguments: 1) { arguments in
            let digits = Array("0123456789abcdef".utf8)
            let hex = SHA1.digest(Array(text(arguments[0]).utf8)).flatMap {
                [digits[Int($0 >> 4)], digits[Int($0 & 15)]]
            }
            return .string(String(decoding: hex, as: UTF8.self))
        }
        return table
    }()

    /// A function's text argument as Go would print it into a string.
    private static func text(_ value: TemplateValue) -> String {
        if case .string(let text) = value { return text }
        return value.printed
    }

    /// yaml.v3's `Unmarshal` into `any`: the document's value, typed as go-task types variables.
    private static func fromYAML(_ value: TemplateValue) throws(TemplateFunctionError) -> TemplateValue {
        do {
            guard let node = try YAMLNode.parse(text(value)) else { return .null }
            return Self.value(of: node)
        } catch {
            throw TemplateFunctionError("yaml: line \(error.mark.line): \(error.message)")
        }
    }
}
