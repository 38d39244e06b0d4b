import Foundation

/// Prints command results as JSON (`--json`) or as text for people.
enum Output {
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return encoder
    }()

    /// One object: JSON, or `field: value` lines in declaration order.
    static func show(_ value: some Encodable, json: Bool) throws {
        if json {
            print(String(decoding: try encoder.encode(value), as: UTF8.self))
            return
        }
        let fields = Mirror(reflecting: value).children.compactMap { child in
            child.label.map { (snakeCase($0), text(child.value)) }
        }
        let width = fields.map(\.0.count).max() ?? 0
        for (name, value) in fields {
            print(name.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + value)
        }
    }

    /// A list: a JSON array, or a table with the given columns.
    static func list<T: Encodable>(_ values: [T], json: Bool, columns: [(String, (T) -> String)]) throws {
        if json {
            print(String(decoding: try encoder.encode(values), as: UTF8.self))
            return
        }
        table(values, columns: columns)
    }

    /// A table with the given columns, a header line first.
    static func table<T>(_ values: [T], columns: [(String, (T) -> String)]) {
        let rows = [columns.map(\.0)] + values.map { value in columns.map { $0.1(value) } }
        let widths = columns.indices.map { column in rows.map { $0[column].count }.max() ?? 0 }
        for row in rows {
            let cells = row.enumerated().map { index, cell in
                index == row.count - 1 ? cell : cell.padding(toLength: widths[index], withPad: " ", startingAt: 0)
            }
            print(cells.joined(separator: "  "))
        }
    }

    private static func text(_ value: Any) -> String {
        let mirror = Mirror(reflecting: value)
        if mirror.displayStyle == .optional {
            guard let wrapped = mirror.children.first?.value else { return "-" }
            return text(wrapped)
        }
        switch value {
        case let date as Date: return self.date(date)
        case let flag as Bool: return flag ? "yes" : "no"
        case let strings as [String]: return strings.joined(separator: ", ")
        default: return "\(value)"
        }
    }

    /// `accountID` → `account_id`, `resultKey` → `result_key`: the same names as the JSON output.
    private static func snakeCase(_ name: String) -> String {
        var result = ""
        var previous: Character?
        for character in name {
            if character.isUppercase, let previous, previous.isLowercase || previous.isNumber { result.append("_") }
            result.append(Character(character.lowercased()))
            previous = character
        }
        return result
    }

    static func date(_ date: Date?) -> String {
        guard let date else { return "-" }
        return ISO8601DateFormatter().string(from: date)
    }
}
