import Foundation
import Testing
import TestSupport

/// README.md's settings table, `.env.example` and `serve --help` name the same settings: a setting added to one and
/// forgotten in another fails here.
@Suite struct SettingsDocumentationTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    static func matches(of pattern: String, in text: some StringProtocol) -> Set<String> {
        let expression = try! NSRegularExpression(pattern: pattern)
        let text = String(text)
        return Set(
            expression.matches(in: text, range: NSRange(text.startIndex..., in: text)).map {
                String(text[Range($0.range, in: text)!])
            })
    }

    @Test func readmeEnvExampleAndServeHelpListTheSameSettings() throws {
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("settings-\(UUID())")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let help = try CLI(directory: scratch, database: scratch.appendingPathComponent("rv.sqlite").path)
            .run(["serve", "--help"])
        #expect(help.status == 0)
        // Options start their line in ArgumentParser's help; `--roots` is an alias printed beside `--trust-anchors`.
        let helpFlags = Self.matches(of: "(?m)^ +--[a-z-]+", in: help.stdout)
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { $0 != "--help" }
        let helpVariables = Self.matches(of: "RECEIPTVERIFY_[A-Z_]+[A-Z]", in: help.stdout)

        let readme = try String(contentsOf: Self.root.appendingPathComponent("README.md"), encoding: .utf8)
        let table = readme.components(separatedBy: "\n").filter { $0.hasPrefix("| `--") || $0.hasPrefix("| —") }
        #expect(table.count >= 20)
        var readmeFlags = Set<String>()
        var readmeVariables = Set<String>()
        for row in table {
            let cells = row.split(separator: "|", omittingEmptySubsequences: false)
            readmeFlags.formUnion(Self.matches(of: "--[a-z-]+[a-z]", in: cells[1]))
            readmeVariables.formUnion(Self.matches(of: "RECEIPTVERIFY_[A-Z_]+[A-Z]", in: cells[2]))
        }
        readmeFlags.remove("--roots")

        let example = try String(contentsOf: Self.root.appendingPathComponent(".env.example"), encoding: .utf8)
        let exampleVariables = Self.matches(of: "(?m)^#? ?RECEIPTVERIFY_[A-Z_]+[A-Z]=", in: example)
            .map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "# =")) }

        #expect(Set(helpFlags) == readmeFlags, "flags: serve --help vs README")
        #expect(helpVariables == readmeVariables, "variables: serve --help vs README")
        #expect(Set(exampleVariables) == readmeVariables, "variables: .env.example vs README")
    }
}
