/// The signed payload of a unified app receipt, rendered as Apple's `verifyReceipt` renders it.
///
/// The payload is `SET OF ReceiptAttribute ::= SEQUENCE { type INTEGER, version INTEGER, value OCTET STRING }`;
/// type 17 holds one in-app purchase each, itself a SET of attributes typed 1701…
/// [Apple's documentation](https://developer.apple.com/documentation/appstorereceipts/responsebody/receipt)
public struct ReceiptPayload: Sendable, Equatable {
    /// The `receipt` object in Apple's field names and types.
    public let json: JSONObject
    /// When the receipt was created (field 12), in milliseconds since 1970: the date its chain is checked at.
    public let creationDate: Int64
    /// The bundle ID (field 2).
    public let bundleID: String
    /// `receipt_type` (field 0): `Production`, `ProductionSandbox`, `Xcode`, …
    public let receiptType: String

    /// The App Store environment the receipt type names.
    public var environment: AppStoreEnvironment {
        switch receiptType {
        case "Production": return .production
        case "Xcode": return .xcode
        default: return .sandbox  // ProductionSandbox, Sandbox, ProductionVPPSandbox
        }
    }

    /// Decodes the payload bytes (the PKCS#7 content).
    public init(der bytes: [UInt8]) throws {
        let attributes = try Self.attributes(bytes, what: "receipt payload")
        var strings: [Int64: String] = [:]
        var integers: [Int64: Int64] = [:]
        var dates: [Int64: Int64?] = [:]
        var purchases: [JSONValue] = []
        for (type, value) in attributes {
            switch type {
            case 0, 2, 3, 19:
                if strings[type] == nil { strings[type] = try Self.string(value, type: type) }
            case 1, 15, 16:
                if integers[type] == nil { integers[type] = try Self.integer(value, type: type) }
            case 12, 18, 21, 32:
                if dates[type] == nil { dates[type] = try Self.date(value, type: type) }
            case 17:
                purchases.append(.object(try Self.inAppPurchase(value)))
            default:
                continue  // opaque value, hashes and undocumented fields are not part of Apple's answer
            }
        }
        guard let bundleID = strings[2] else {
            throw ReceiptError(.malformedPayload, "receipt payload has no bundle ID (field 2)")
        }
        guard let created = dates[12], let creationDate = created else {
            throw ReceiptError(.malformedPayload, "receipt payload has no creation date (field 12)")
        }
        var json = JSONObject()
        json.append("receipt_type", .string(strings[0] ?? ""))
        json.append("adam_id", .integer(integers[1] ?? 0))
        json.append("app_item_id", .integer(integers[1] ?? 0))
        json.append("bundle_id", .string(bundleID))
        json.append("application_version", .string(strings[3] ?? ""))
        json.append("download_id", .integer(integers[15] ?? 0))
        json.append("version_external_identifier", .integer(integers[16] ?? 0))
        for (key, value) in AppleDate.members("receipt_creation_date", milliseconds: creationDate) {
            json.append(key, value)
        }
        for (type, name) in [(21, "receipt_expiration_date"), (18, "original_purchase_date"), (32, "preorder_date")] {
            if let date = dates[Int64(type)], let date {
                for (key, value) in AppleDate.members(name, milliseconds: date) { json.append(key, value) }
            }
        }
        json.append("original_application_version", .string(strings[19] ?? ""))
        json.append("in_app", .array(purchases))
        self.json = json
        self.creationDate = creationDate
        self.bundleID = bundleID
        self.receiptType = strings[0] ?? ""
    }

    /// One in-app purchase (field 17) in Apple's field order.
    private static func inAppPurchase(_ value: [UInt8]) throws -> JSONObject {
        var strings: [Int64: String] = [:]
        var integers: [Int64: Int64] = [:]
        var dates: [Int64: Int64?] = [:]
        for (type, inner) in try attributes(value, what: "in-app purchase") {
            switch type {
            case 1702, 1703, 1705, 1721:
                if strings[type] == nil { strings[type] = try string(inner, type: type) }
            case 1701, 1711, 1713, 1719:
                if integers[type] == nil { integers[type] = try integer(inner, type: type) }
            case 1704, 1706, 1708, 1712:
                if dates[type] == nil { dates[type] = try date(inner, type: type) }
            default:
                continue
            }
        }
        // Apple's defaults, as its answers show them: `original_transaction_id` and `is_trial_period` are always
        // present; `is_in_intro_offer_period` is present for subscriptions (those with an expiry date);
        // `web_order_line_item_id` is left out when zero (consumables and other non-subscriptions).
        var json = JSONObject()
        if let quantity = integers[1701] { json.append("quantity", .string(String(quantity))) }
        if let product = strings[1702] { json.append("product_id", .string(product)) }
        if let transaction = strings[1703] { json.append("transaction_id", .string(transaction)) }
        json.append("original_transaction_id", .string(strings[1705] ?? ""))
        for (type, name) in [
            (1704, "purchase_date"), (1706, "original_purchase_date"), (1708, "expires_date"),
            (1712, "cancellation_date"),
        ] {
            if let date = dates[Int64(type)], let date {
                for (key, value) in AppleDate.members(name, milliseconds: date) { json.append(key, value) }
            }
        }
        if let lineItem = integers[1711], lineItem != 0 {
            json.append("web_order_line_item_id", .string(String(lineItem)))
        }
        json.append("is_trial_period", .string((integers[1713] ?? 0) != 0 ? "true" : "false"))
        let isSubscription = dates[1708].map { $0 != nil } ?? false
        if integers[1719] != nil || isSubscription {
            json.append("is_in_intro_offer_period", .string((integers[1719] ?? 0) != 0 ? "true" : "false"))
        }
        if let offer = strings[1721], !offer.isEmpty { json.append("promotional_offer_id", .string(offer)) }
        return json
    }

    /// The (type, value) pairs of a SET OF ReceiptAttribute, in order; each value is its own small byte array.
    private static func attributes(_ bytes: [UInt8], what: String) throws -> [(Int64, [UInt8])] {
        let reader = BERReader(bytes: bytes, code: .malformedPayload)
        let root = try reader.element(at: 0, limit: bytes.count)
        guard root.tag == 0x31, root.end == bytes.count else {
            throw ReceiptError(.malformedPayload, "\(what) is not a SET")
        }
        var attributes: [(Int64, [UInt8])] = []
        try reader.forEachChild(of: root) { attribute in
            let fields = try reader.children(of: attribute, depth: 1)
            guard attribute.tag == 0x30, fields.count == 3, fields[2].tag & 0xDF == 0x04 else {
                throw ReceiptError(.malformedPayload, "\(what) attribute is not (type, version, value)")
            }
            attributes.append((try reader.integer(fields[0]), Array(try reader.octets(of: fields[2], depth: 2))))
        }
        return attributes
    }

    private static func string(_ value: [UInt8], type: Int64) throws -> String {
        guard let (tag, content) = ASN1Value.tlv(value), tag == 0x0C || tag == 0x16 else {
            throw ReceiptError(.malformedPayload, "field \(type) is not a UTF8String or IA5String")
        }
        guard let text = String(validating: content, as: UTF8.self) else {
            throw ReceiptError(.malformedPayload, "field \(type) is not valid UTF-8")
        }
        return text
    }

    private static func integer(_ value: [UInt8], type: Int64) throws -> Int64 {
        guard let (tag, content) = ASN1Value.tlv(value), tag == 0x02 else {
            throw ReceiptError(.malformedPayload, "field \(type) is not an INTEGER")
        }
        return try ASN1Value.integer(Array(content), .malformedPayload, "field \(type)")
    }

    /// A date field: an IA5String RFC 3339 timestamp, or empty (nil) when Apple left it blank.
    private static func date(_ value: [UInt8], type: Int64) throws -> Int64? {
        guard let (tag, content) = ASN1Value.tlv(value), tag == 0x16 || tag == 0x0C else {
            throw ReceiptError(.malformedPayload, "field \(type) is not an IA5String date")
        }
        if content.isEmpty { return nil }
        guard let millis = AppleDate.milliseconds(rfc3339: content) else {
            throw ReceiptError(.malformedPayload, "field \(type) is not an RFC 3339 date")
        }
        return millis
    }
}
