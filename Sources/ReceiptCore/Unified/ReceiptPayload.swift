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
    /// `receipt_type` (field 0): `Production`, `ProductionVPP`, `ProductionSandbox`, `ProductionVPPSandbox`, `Xcode`.
    /// [Apple's documentation](https://developer.apple.com/documentation/appstorereceipts/receipt_type)
    public let receiptType: String

    /// The App Store environment the receipt type names.
    ///
    /// A volume-purchase receipt (`ProductionVPP`) is a production receipt, and `ProductionVPPSandbox` a sandbox one.
    /// A type Apple has not documented counts as sandbox, so that it never passes an app's production-only check.
    public var environment: StoreEnvironment { Self.environment(ofReceiptType: receiptType) }

    /// The environment a `receipt_type` names.
    static func environment(ofReceiptType type: String) -> StoreEnvironment {
        switch type {
        case "Production", "ProductionVPP": return .production
        case "Xcode": return .xcode
        default: return .sandbox  // ProductionSandbox, ProductionVPPSandbox, Sandbox, anything undocumented
        }
    }

    /// Decodes the payload bytes (the PKCS#7 content).
    public init(der bytes: [UInt8]) throws {
        let reader = BERReader(bytes: bytes, code: .malformedPayload)
        let root = try reader.element(at: 0, limit: bytes.count)
        guard root.tag == 0x31, root.end == bytes.count else {
            throw ReceiptError(.malformedPayload, "receipt payload is not a SET")
        }
        var receiptType: String?
        var bundleID: String?
        var applicationVersion: String?
        var originalApplicationVersion: String?
        var appItemID: Int64?
        var downloadID: Int64?
        var versionExternalIdentifier: Int64?
        var creationDate: Int64??
        var originalPurchaseDate: Int64??
        var expirationDate: Int64??
        var preorderDate: Int64??
        var purchases: [JSONValue] = []
        try Self.forEachAttribute(reader, in: root, depth: 0) { type, value in
            switch type {
            case 0: if receiptType == nil { receiptType = try value.string(type) }
            case 2: if bundleID == nil { bundleID = try value.string(type) }
            case 3: if applicationVersion == nil { applicationVersion = try value.string(type) }
            case 19: if originalApplicationVersion == nil { originalApplicationVersion = try value.string(type) }
            case 1: if appItemID == nil { appItemID = try value.integer(type) }
            case 15: if downloadID == nil { downloadID = try value.integer(type) }
            case 16: if versionExternalIdentifier == nil { versionExternalIdentifier = try value.integer(type) }
            case 12: if creationDate == nil { creationDate = .some(try value.date(type)) }
            case 18: if originalPurchaseDate == nil { originalPurchaseDate = .some(try value.date(type)) }
            case 21: if expirationDate == nil { expirationDate = .some(try value.date(type)) }
            case 32: if preorderDate == nil { preorderDate = .some(try value.date(type)) }
            case 17: purchases.append(.object(try Self.inAppPurchase(value)))
            default: break  // opaque value, hashes and undocumented fields are not part of Apple's answer
            }
        }
        guard let bundleID else {
            throw ReceiptError(.malformedPayload, "receipt payload has no bundle ID (field 2)")
        }
        guard let created = creationDate, let creationDate = created else {
            throw ReceiptError(.malformedPayload, "receipt payload has no creation date (field 12)")
        }
        var json = JSONObject(capacity: 24)
        json.append("receipt_type", .string(receiptType ?? ""))
        json.append("adam_id", .integer(appItemID ?? 0))
        json.append("app_item_id", .integer(appItemID ?? 0))
        json.append("bundle_id", .string(bundleID))
        json.append("application_version", .string(applicationVersion ?? ""))
        json.append("download_id", .integer(downloadID ?? 0))
        json.append("version_external_identifier", .integer(versionExternalIdentifier ?? 0))
        AppleDate.append(Fields.receiptCreationDate, milliseconds: creationDate, to: &json)
        for (field, date) in [
            (Fields.receiptExpirationDate, expirationDate), (Fields.originalPurchaseDate, originalPurchaseDate),
            (Fields.preorderDate, preorderDate),
        ] {
            if let date, let date { AppleDate.append(field, milliseconds: date, to: &json) }
        }
        json.append("original_application_version", .string(originalApplicationVersion ?? ""))
        json.append("in_app", .array(purchases))
        self.json = json
        self.creationDate = creationDate
        self.bundleID = bundleID
        self.receiptType = receiptType ?? ""
    }

    /// The date fields' member names, built once.
    private enum Fields {
        static let receiptCreationDate = AppleDate.Field("receipt_creation_date")
        static let receiptExpirationDate = AppleDate.Field("receipt_expiration_date")
        static let originalPurchaseDate = AppleDate.Field("original_purchase_date")
        static let preorderDate = AppleDate.Field("preorder_date")
        static let purchaseDate = AppleDate.Field("purchase_date")
        static let expiresDate = AppleDate.Field("expires_date")
        static let cancellationDate = AppleDate.Field("cancellation_date")
    }

    /// One in-app purchase (field 17) in Apple's field order.
    private static func inAppPurchase(_ value: AttributeValue) throws -> JSONObject {
        var quantity: Int64?
        var productID: String?
        var transactionID: String?
        var originalTransactionID: String?
        var promotionalOfferID: String?
        var webOrderLineItemID: Int64?
        var trial: Int64?
        var intro: Int64?
        var purchaseDate: Int64??
        var originalPurchaseDate: Int64??
        var expiresDate: Int64??
        var cancellationDate: Int64??
        let (reader, set) = try value.nestedSet()
        try forEachAttribute(reader, in: set, depth: 1) { type, inner in
            switch type {
            case 1701: if quantity == nil { quantity = try inner.integer(type) }
            case 1702: if productID == nil { productID = try inner.string(type) }
            case 1703: if transactionID == nil { transactionID = try inner.string(type) }
            case 1705: if originalTransactionID == nil { originalTransactionID = try inner.string(type) }
            case 1721: if promotionalOfferID == nil { promotionalOfferID = try inner.string(type) }
            case 1711: if webOrderLineItemID == nil { webOrderLineItemID = try inner.integer(type) }
            case 1713: if trial == nil { trial = try inner.integer(type) }
            case 1719: if intro == nil { intro = try inner.integer(type) }
            case 1704: if purchaseDate == nil { purchaseDate = .some(try inner.date(type)) }
            case 1706: if originalPurchaseDate == nil { originalPurchaseDate = .some(try inner.date(type)) }
            case 1708: if expiresDate == nil { expiresDate = .some(try inner.date(type)) }
            case 1712: if cancellationDate == nil { cancellationDate = .some(try inner.date(type)) }
            default: break
            }
        }
        // Apple's defaults, as its answers show them: `original_transaction_id` and `is_trial_period` are always
        // present; `is_in_intro_offer_period` is present for subscriptions (those with an expiry date);
        // `web_order_line_item_id` is left out when zero (consumables and other non-subscriptions).
        var json = JSONObject(capacity: 20)
        if let quantity { json.append("quantity", .string(String(quantity))) }
        if let productID { json.append("product_id", .string(productID)) }
        if let transactionID { json.append("transaction_id", .string(transactionID)) }
        json.append("original_transaction_id", .string(originalTransactionID ?? ""))
        for (field, date) in [
            (Fields.purchaseDate, purchaseDate), (Fields.originalPurchaseDate, originalPurchaseDate),
            (Fields.expiresDate, expiresDate), (Fields.cancellationDate, cancellationDate),
        ] {
            if let date, let date { AppleDate.append(field, milliseconds: date, to: &json) }
        }
        if let webOrderLineItemID, webOrderLineItemID != 0 {
            json.append("web_order_line_item_id", .string(String(webOrderLineItemID)))
        }
        json.append("is_trial_period", .string((trial ?? 0) != 0 ? "true" : "false"))
        let isSubscription = expiresDate.map { $0 != nil } ?? false
        if intro != nil || isSubscription {
            json.append("is_in_intro_offer_period", .string((intro ?? 0) != 0 ? "true" : "false"))
        }
        if let promotionalOfferID, !promotionalOfferID.isEmpty {
            json.append("promotional_offer_id", .string(promotionalOfferID))
        }
        return json
    }

    /// Calls `body` with each (type, value) of a SET OF ReceiptAttribute, in order, without copying values.
    private static func forEachAttribute(
        _ reader: BERReader, in set: BERReader.Element, depth: Int, _ body: (Int64, AttributeValue) throws -> Void
    ) throws {
        try reader.forEachChild(of: set, depth: depth) { attribute in
            guard attribute.tag == 0x30 else {
                throw ReceiptError(.malformedPayload, "a receipt attribute is not a SEQUENCE")
            }
            let type = try reader.element(at: attribute.contentStart, limit: attribute.contentEnd, depth: depth + 2)
            let version = try reader.element(at: type.end, limit: attribute.contentEnd, depth: depth + 2)
            let value = try reader.element(at: version.end, limit: attribute.contentEnd, depth: depth + 2)
            guard value.end == attribute.contentEnd, value.tag & 0xDF == 0x04, version.tag == 0x02 else {
                throw ReceiptError(.malformedPayload, "a receipt attribute is not (type, version, value)")
            }
            try body(try reader.integer(type), AttributeValue(reader: reader, octets: value, depth: depth + 2))
        }
    }
}

/// The OCTET STRING of one receipt attribute, decoded on demand as the type its field number calls for.
private struct AttributeValue {
    let reader: BERReader
    let octets: BERReader.Element
    let depth: Int

    /// The single DER value inside the OCTET STRING.
    private func inner() throws -> (reader: BERReader, element: BERReader.Element) {
        if octets.isConstructed {
            // A chunked (BER) OCTET STRING: join the chunks, then read the value from them.
            let joined = Array(try reader.octets(of: octets, depth: depth))
            let own = BERReader(bytes: joined, code: .malformedPayload)
            let element = try own.element(at: 0, limit: joined.count, depth: depth + 1)
            guard element.end == joined.count else { throw ReceiptError(.malformedPayload, "trailing bytes") }
            return (own, element)
        }
        let element = try reader.element(at: octets.contentStart, limit: octets.contentEnd, depth: depth + 1)
        guard element.end == octets.contentEnd else {
            throw ReceiptError(.malformedPayload, "a receipt attribute value has trailing bytes")
        }
        return (reader, element)
    }

    func string(_ type: Int64) throws -> String {
        let (reader, element) = try inner()
        guard element.tag == 0x0C || element.tag == 0x16 else {
            throw ReceiptError(.malformedPayload, "field \(type) is not a UTF8String or IA5String")
        }
        guard
            let text = String(
                validating: reader.bytes[element.contentStart..<element.contentEnd], as: UTF8.self)
        else { throw ReceiptError(.malformedPayload, "field \(type) is not valid UTF-8") }
        return text
    }

    func integer(_ type: Int64) throws -> Int64 {
        let (reader, element) = try inner()
        guard element.tag == 0x02 else { throw ReceiptError(.malformedPayload, "field \(type) is not an INTEGER") }
        return try reader.integer(element)
    }

    /// An IA5String RFC 3339 timestamp, or nil when Apple left it blank.
    func date(_ type: Int64) throws -> Int64? {
        let (reader, element) = try inner()
        guard element.tag == 0x16 || element.tag == 0x0C else {
            throw ReceiptError(.malformedPayload, "field \(type) is not an IA5String date")
        }
        if element.contentStart == element.contentEnd { return nil }
        guard
            let millis = AppleDate.milliseconds(
                rfc3339: reader.bytes[element.contentStart..<element.contentEnd])
        else { throw ReceiptError(.malformedPayload, "field \(type) is not an RFC 3339 date") }
        return millis
    }

    /// The SET inside a field 17 value.
    func nestedSet() throws -> (BERReader, BERReader.Element) {
        let (reader, element) = try inner()
        guard element.tag == 0x31 else { throw ReceiptError(.malformedPayload, "an in-app purchase is not a SET") }
        return (reader, element)
    }
}
