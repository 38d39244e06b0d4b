/// A JSON value that keeps object keys in the order they were added, as Apple's answers are laid out.
///
/// Apple's `verifyReceipt` JSON mixes strings that hold numbers (`"quantity": "1"`) with real numbers
/// (`"adam_id": 0`); this type keeps that distinction exactly. Not `indirect`: arrays and objects already hold their
/// elements on the heap, and a box per scalar value would cost an allocation each.
public enum JSONValue: Sendable, Hashable {
    case string(String)
    case integer(Int64)
    case double(Double)
    case bool(Bool)
    case null
    case array([JSONValue])
    case object(JSONObject)

    /// The value for `key` when this is an object.
    public subscript(key: String) -> JSONValue? {
        guard case .object(let object) = self else { return nil }
        return object[key]
    }

    /// The string when this is a string.
    public var stringValue: String? {
        guard case .string(let text) = self else { return nil }
        return text
    }

    /// The elements when this is an array.
    public var arrayValue: [JSONValue]? {
        guard case .array(let elements) = self else { return nil }
        return elements
    }
}

/// A JSON object with its keys in insertion order; setting an existing key replaces its value in place.
public struct JSONObject: Sendable, Hashable, ExpressibleByDictionaryLiteral {
    /// The members, in order.
    public private(set) var members: [(key: String, value: JSONValue)]

    /// An empty object.
    public init() { members = [] }

    /// An empty object with room for `capacity` members.
    public init(capacity: Int) {
        members = []
        members.reserveCapacity(capacity)
    }

    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        members = []
        for (key, value) in elements { self[key] = value }
    }

    /// The value for `key`, or nil; assigning nil removes the key.
    public subscript(key: String) -> JSONValue? {
        get { members.first(where: { $0.key == key })?.value }
        set {
            if let index = members.firstIndex(where: { $0.key == key }) {
                if let newValue { members[index].value = newValue } else { members.remove(at: index) }
            } else if let newValue {
                members.append((key, newValue))
            }
        }
    }

    /// Appends a member without looking for an existing one; for building objects whose keys are known distinct.
    public mutating func append(_ key: String, _ value: JSONValue) { members.append((key, value)) }

    /// The keys, in order.
    public var keys: [String] { members.map(\.key) }

    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.members.count == rhs.members.count
            && zip(lhs.members, rhs.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }

    public func hash(into hasher: inout Hasher) {
        for member in members {
            hasher.combine(member.key)
            hasher.combine(member.value)
        }
    }
}
