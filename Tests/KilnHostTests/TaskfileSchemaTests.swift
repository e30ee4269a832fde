import Foundation
import Testing

@testable import KilnHost

/// `Taskfiles/taskfile.schema.json` describes exactly the keys the loader reads, so the two can't
/// drift apart.
@Suite struct TaskfileSchemaTests {
    static let schemaPath = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Taskfiles/taskfile.schema.json").path

    private func schema() throws -> [String: Any] {
        let data = try #require(FileManager.default.contents(atPath: Self.schemaPath), "can't read \(Self.schemaPath)")
        return try #require(
            try JSONSerialization.jsonObject(with: data) as? [String: Any],
            "the schema is not a JSON object"
        )
    }

    @Test func theSchemaIsAJSONObjectThatRejectsUnknownKeys() throws {
        let schema = try schema()
        #expect(schema["$schema"] as? String == "https://json-schema.org/draft/2020-12/schema")
        #expect(schema["type"] as? String == "object")
        #expect(schema["additionalProperties"] as? Bool == false)
        let task = try #require((schema["$defs"] as? [String: Any])?["task"] as? [String: Any])
        #expect(task["additionalProperties"] as? Bool == false)
    }

    @Test func theSchemasTopLevelPropertiesAreTheLoadersTopLevelKeys() throws {
        let properties = try #require(try schema()["properties"] as? [String: Any])
        #expect(Set(properties.keys) == TaskfileLoader.topLevelKeys)
    }

    @Test func theSchemasTaskPropertiesAreTheLoadersTaskKeys() throws {
        let definitions = try #require(try schema()["$defs"] as? [String: Any])
        let task = try #require(definitions["task"] as? [String: Any])
        let properties = try #require(task["properties"] as? [String: Any])
        #expect(Set(properties.keys) == TaskfileLoader.taskKeys)
    }
}
