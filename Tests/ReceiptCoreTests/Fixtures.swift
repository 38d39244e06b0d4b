import Foundation
import TestSupport
import Testing

/// The real Apple data in `../shared/fixtures` (or `RECEIPTVERIFY_FIXTURES`), read in place, never copied.
enum Fixtures {
    /// The fixtures folder; nil outside CI when it is missing (a test that needs it then records an issue under CI).
    static var directory: URL? {
        if let directory = SharedFixtures.directory { return directory }
        if SharedFixtures.isCI { Issue.record("fixtures folder \(SharedFixtures.path) is missing under CI") }
        return nil
    }
}

extension Fixtures {
    /// JSON bytes as Foundation values, for order-insensitive comparison.
    static func foundationJSON(_ bytes: some Collection<UInt8>) throws -> NSObject {
        try JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) as! NSObject
    }

    /// The value with every object key that starts with `_` removed (facts about the container, not the answer).
    static func withoutPrivateKeys(_ value: NSObject) -> NSObject {
        if let object = value as? [String: Any] {
            return NSDictionary(
                dictionary: object.filter { !$0.key.hasPrefix("_") }.mapValues { withoutPrivateKeys($0 as! NSObject) })
        }
        if let array = value as? [Any] { return NSArray(array: array.map { withoutPrivateKeys($0 as! NSObject) }) }
        return value
    }

    /// Records where two JSON values differ, to make a failing comparison readable.
    static func explainDifference(_ ours: Any, _ expected: Any, path: String) {
        if let a = ours as? [String: Any], let b = expected as? [String: Any] {
            for key in Set(a.keys).union(b.keys).sorted() {
                guard let left = a[key] else { Issue.record("\(path).\(key) missing from ours"); continue }
                guard let right = b[key] else { Issue.record("\(path).\(key) unexpected in ours: \(left)"); continue }
                explainDifference(left, right, path: "\(path).\(key)")
            }
        } else if let a = ours as? [Any], let b = expected as? [Any] {
            if a.count != b.count { Issue.record("\(path): \(a.count) elements, expected \(b.count)") }
            for (index, pair) in zip(a, b).enumerated() { explainDifference(pair.0, pair.1, path: "\(path)[\(index)]") }
        } else if !((ours as? NSObject)?.isEqual(expected) ?? false) {
            Issue.record("\(path): \(ours) ≠ expected \(expected)")
        }
    }
}
