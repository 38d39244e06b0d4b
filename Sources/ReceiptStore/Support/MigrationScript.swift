import ReceiptService

/// A schema file split into its always-run preamble and its numbered migrations.
///
/// The format is the one `schema.sql` documents: `-- version: N description` opens a migration; a statement ends
/// with `;` at the end of a line.
struct MigrationScript: Sendable {
    /// One numbered migration.
    struct Migration: Sendable {
        let version: Int
        let description: String
        let statements: [String]
    }

    let preamble: [String]
    let migrations: [Migration]

    init(_ text: String) throws {
        var preamble: [String] = []
        var migrations: [Migration] = []
        var current: (version: Int, description: String, statements: [String])?
        var statement: [Substring] = []

        func finishStatement() {
            let sql = statement.joined(separator: "\n").trimmingCharactersWhitespace()
            statement = []
            guard !sql.isEmpty else { return }
            if current != nil { current?.statements.append(sql) } else { preamble.append(sql) }
        }

        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("-- version:") {
                finishStatement()
                if let done = current {
                    migrations.append(
                        Migration(version: done.version, description: done.description, statements: done.statements))
                }
                let header = line.dropFirst("-- version:".count).drop(while: { $0 == " " })
                let number = header.prefix(while: { $0.isNumber })
                guard let version = Int(number), version == (migrations.last?.version ?? 0) + 1 else {
                    throw ServiceError(.storage, "schema: migration versions must count up from 1 (at '\(line)')")
                }
                current = (version, String(header.dropFirst(number.count)).trimmingCharactersWhitespace(), [])
                continue
            }
            let trimmed = line.drop(while: { $0 == " " })
            if statement.isEmpty && (trimmed.isEmpty || trimmed.hasPrefix("--")) { continue }
            statement.append(line)
            if line.hasSuffix(";") { finishStatement() }
        }
        finishStatement()
        if let done = current {
            migrations.append(
                Migration(version: done.version, description: done.description, statements: done.statements))
        }
        self.preamble = preamble
        self.migrations = migrations
    }
}

extension String {
    func trimmingCharactersWhitespace() -> String {
        var slice = Substring(self)
        while let first = slice.first, first.isWhitespace { slice = slice.dropFirst() }
        while let last = slice.last, last.isWhitespace { slice = slice.dropLast() }
        return String(slice)
    }
}

extension Substring {
    func trimmingCharactersWhitespace() -> String { String(self).trimmingCharactersWhitespace() }
}
