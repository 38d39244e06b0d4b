import Foundation
import ReceiptCore
import ReceiptService

/// Reads a `/api` body, form-urlencoded or JSON, into a ``VerificationRequest``.
///
/// Apple's spellings (`receipt-data`, `exclude-old-transactions`) are accepted beside ours, so a client written
/// for `verifyReceipt` can switch by changing the URL and adding its credentials.
enum RequestBody {
    /// The body's media type.
    enum Format: Sendable {
        case form
        case json
    }

    /// Why a body could not be read; the reason (naming the field, never its value) goes to the log.
    struct Unreadable: Error {
        let reason: String
    }

    /// The format named by a `Content-Type` header, or nil when it is neither form nor JSON, or names a charset
    /// other than UTF-8 (or its subset US-ASCII): bodies are read as UTF-8 only.
    static func format(contentType: String?) -> Format? {
        guard let contentType else { return nil }
        let parts = contentType.lowercased().split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        for parameter in parts.dropFirst() where parameter.hasPrefix("charset=") {
            let charset = parameter.dropFirst("charset=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            guard ["utf-8", "utf8", "us-ascii"].contains(charset) else { return nil }
        }
        switch parts.first ?? "" {
        case "application/json": return .json
        case "application/x-www-form-urlencoded": return .form
        default: return nil
        }
    }

    /// The most fields a body may carry (a real client sends a handful); more is refused before anything else.
    static let maximumFields = 64
    /// The deepest nesting a JSON body may have (the fields are flat; unknown ones may nest a little).
    static let maximumDepth = 16

    /// The request the body holds.
    static func decode(_ bytes: some Collection<UInt8>, as format: Format) throws(Unreadable) -> VerificationRequest {
        let fields: [String: Field]
        switch format {
        case .form: fields = try formFields(bytes)
        case .json: fields = try jsonFields(bytes)
        }
        var request = VerificationRequest()
        request.apiKey = try fields.text("apikey")
        request.token = try fields.text("token")
        request.receipt = try fields.text("receipt", "receipt-data", limit: nil)
        request.password = try fields.text("password")
        request.excludeOldTransactions = try fields.flag("exclude_old_transactions", "exclude-old-transactions")
        request.transactionID = try fields.text("transaction_id")
        request.lookup = try fields.flag("lookup")
        request.environment = try fields.text("environment")
        request.appTransactionID = try fields.text("app_transaction_id")
        request.productID = try fields.text("product_id")
        request.nonce = try fields.text("nonce", limit: VerificationRequest.maximumNonceLength)
        request.appUserID = try fields.text("app_user_id")
        request.originalTransactionID = try fields.text("original_transaction_id")
        request.transactionIDs = try fields.list("transaction_ids", limit: VerificationRequest.maximumTransactionIDs)
        request.cursor = try fields.text("cursor", limit: VerificationRequest.maximumCursorLength)
        request.action = try fields.text("action")
        request.url = try fields.text("url", limit: 2_048)
        request.eventTypes = try fields.list("event_types", limit: 64)
        request.endpointID = try fields.text("endpoint_id")
        request.graceHours = try fields.text("grace_hours")
        request.eventID = try fields.text("event_id")
        request.state = try fields.text("state")
        request.offerKind = try fields.text("kind")
        request.offerID = try fields.text("offer_id")
        request.applicationUsername = try fields.text("application_username")
        request.allowIntroductoryOffer =
            fields["allow_introductory_offer"] == nil ? nil : try fields.flag("allow_introductory_offer")
        request.bundleID = try fields.text("bundle_id")
        request.consumptionPercentage = try fields.text("consumption_percentage")
        request.deliveryStatus = try fields.text("delivery_status")
        request.appAccountToken = try fields.text("app_account_token")
        request.extendByDays = try fields.text("extend_by_days")
        request.extendReasonCode = try fields.text("extend_reason_code")
        request.requestIdentifier = try fields.text("request_identifier")
        request.storefrontCountryCodes = try fields.list("storefront_country_codes", limit: 300)
        request.store = try fields.text("store")
        request.packageName = try fields.text("package_name")
        request.purchaseToken = try fields.text("purchase_token", limit: GooglePlayPurchase.maximumTokenLength)
        request.purchaseType = try fields.text("purchase_type")
        request.purchase = try fields.text("purchase", limit: 8_192)
        request.purchaseSignature = try fields.text("signature", limit: 1_024)
        request.limit = try fields.text("limit").map { text throws(Unreadable) in
            guard let limit = Int(text), (1...VerificationRequest.maximumPageSize).contains(limit) else {
                throw Unreadable(reason: "field 'limit' must be a whole number from 1 to 1000")
            }
            return limit
        }
        return request
    }

    /// One field's value: form fields are always text; JSON ones keep their type.
    enum Field {
        case text(String)
        case json(JSONValue)
    }

    private static func jsonFields(_ bytes: some Collection<UInt8>) throws(Unreadable) -> [String: Field] {
        let value: JSONValue
        do {
            value = try JSONParser.parse(bytes, maximumDepth: maximumDepth, maximumMembers: maximumFields)
        } catch {
            throw Unreadable(
                reason: "the body is not JSON, nests deeper than \(maximumDepth) or has over \(maximumFields) fields")
        }
        guard case .object(let object) = value else { throw Unreadable(reason: "the JSON body is not an object") }
        var fields: [String: Field] = [:]
        for member in object.members {
            guard fields.updateValue(.json(member.value), forKey: member.key) == nil else {
                throw Unreadable(reason: "field '\(printable(member.key))' is given twice")
            }
        }
        return fields
    }

    private static func formFields(_ body: some Collection<UInt8>) throws(Unreadable) -> [String: Field] {
        // One contiguous copy, then index arithmetic: generic slicing of a ByteBufferView costs more than the
        // verification itself on a receipt-sized body.
        let bytes = Array(body)
        var fields: [String: Field] = [:]
        var start = 0
        while start <= bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "&")) ?? bytes.count
            if end > start {
                let equals = bytes[start..<end].firstIndex(of: UInt8(ascii: "=")) ?? end
                let key = try percentDecoded(bytes, start..<equals)
                let value = equals < end ? try percentDecoded(bytes, (equals + 1)..<end) : ""
                guard fields.updateValue(.text(value), forKey: key) == nil else {
                    throw Unreadable(reason: "field '\(printable(key))' is given twice")
                }
                guard fields.count <= maximumFields else {
                    throw Unreadable(reason: "the body has over \(maximumFields) fields")
                }
            }
            start = end + 1
        }
        return fields
    }

    /// `application/x-www-form-urlencoded` decoding: `+` is a space, `%XX` a byte; the result must be UTF-8.
    private static func percentDecoded(_ bytes: [UInt8], _ range: Range<Int>) throws(Unreadable) -> String {
        // A receipt is tens of kilobytes with its `+`, `/` and `=` percent-encoded: the runs between two `%` are
        // found with the C library's vectorised `memchr` and copied whole (their `+` made spaces), and a text
        // whose bytes are all ASCII needs no UTF-8 validation.
        var malformed = false
        var seen: UInt8 = 0
        let output = bytes.withUnsafeBufferPointer { input in
            [UInt8](unsafeUninitializedCapacity: range.count) { out, initialized in
                let base = input.baseAddress!
                var count = 0
                var index = range.lowerBound
                while index < range.upperBound {
                    let found = memchr(base + index, Int32(UInt8(ascii: "%")), range.upperBound - index)
                    let runEnd =
                        found.map { base.distance(to: $0.assumingMemoryBound(to: UInt8.self)) }
                        ?? range.upperBound
                    (out.baseAddress! + count).update(from: base + index, count: runEnd - index)
                    // In the run as sent, `+` is a space; a decoded `%2B` below stays a plus.
                    // The same pass notes whether any byte is beyond ASCII.
                    for position in count..<(count + runEnd - index) {
                        seen |= out[position]
                        if out[position] == UInt8(ascii: "+") { out[position] = 0x20 }
                    }
                    count += runEnd - index
                    index = runEnd
                    guard index < range.upperBound else { break }
                    guard index + 2 < range.upperBound, let high = hexValue(input[index + 1]),
                        let low = hexValue(input[index + 2])
                    else {
                        malformed = true
                        break
                    }
                    out[count] = high << 4 | low
                    seen |= out[count]
                    count += 1
                    index += 3
                }
                initialized = count
            }
        }
        if malformed { throw Unreadable(reason: "malformed percent-encoding") }
        if seen < 0x80 { return String(decoding: output, as: UTF8.self) }
        guard let text = String(validating: output, as: UTF8.self) else {
            throw Unreadable(reason: "a form field is not UTF-8")
        }
        return text
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return byte - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The field names a body is read for.
    static let knownFields: Set<String> = [
        "apikey", "token", "receipt", "receipt-data", "password", "exclude_old_transactions",
        "exclude-old-transactions", "transaction_id", "product_id", "nonce", "app_user_id",
        "original_transaction_id", "transaction_ids", "cursor", "limit", "app_transaction_id", "action", "url",
        "event_types", "endpoint_id", "grace_hours", "event_id", "state", "kind", "offer_id", "application_username",
        "allow_introductory_offer", "bundle_id", "consumption_percentage", "delivery_status", "app_account_token",
        "extend_by_days", "extend_reason_code", "request_identifier", "storefront_country_codes", "store",
        "package_name", "purchase_token", "purchase_type", "purchase",
        "signature",
    ]

    /// A field name fit for a log line: a name we read, or "an unknown field" (a client may put anything in a name,
    /// a key included).
    static func printable(_ name: String) -> String {
        knownFields.contains(name) ? name : "(unknown field)"
    }
}

extension [String: RequestBody.Field] {
    /// The text of the first of `names` present; numbers are accepted as text (ids sent as JSON numbers).
    fileprivate func text(
        _ names: String..., limit: Int? = VerificationRequest.maximumFieldLength
    ) throws(RequestBody.Unreadable) -> String? {
        guard let name = names.first(where: { self[$0] != nil }), let field = self[name] else { return nil }
        let text: String
        switch field {
        case .text(let value), .json(.string(let value)): text = value
        case .json(.integer(let number)):
            // Up to 2^53, where every JSON parser is exact (docs/api.md): a larger id was already rounded by a client.
            guard number.magnitude <= 9_007_199_254_740_991 else {
                throw RequestBody.Unreadable(reason: "field '\(name)' is an integer beyond 2^53")
            }
            text = String(number)
        case .json(.double(let number)):
            guard let whole = Self.wholeNumber(number) else {
                throw RequestBody.Unreadable(reason: "field '\(name)' must be a string")
            }
            text = String(whole)
        case .json(.null): return nil
        case .json: throw RequestBody.Unreadable(reason: "field '\(name)' must be a string")
        }
        if let limit, text.utf8.count > limit {
            throw RequestBody.Unreadable(reason: "field '\(name)' is longer than \(limit) bytes")
        }
        return text
    }

    /// The texts of a list field: a JSON array of strings or numbers, or (in a form) one text with the values
    /// separated by commas; each value at most ``VerificationRequest/maximumFieldLength`` bytes, at most `limit` of
    /// them.
    fileprivate func list(_ name: String, limit: Int) throws(RequestBody.Unreadable) -> [String]? {
        guard let field = self[name] else { return nil }
        var values: [String] = []
        switch field {
        case .text(let text), .json(.string(let text)):
            values = text.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) }
        case .json(.array(let elements)):
            for element in elements {
                switch element {
                case .string(let text): values.append(text)
                case .integer(let number): values.append(String(number))
                default: throw RequestBody.Unreadable(reason: "field '\(name)' must hold strings")
                }
            }
        case .json(.null): return nil
        case .json: throw RequestBody.Unreadable(reason: "field '\(name)' must be a list")
        }
        guard values.count <= limit else {
            throw RequestBody.Unreadable(reason: "field '\(name)' holds more than \(limit) values")
        }
        guard values.allSatisfy({ !$0.isEmpty && $0.utf8.count <= VerificationRequest.maximumFieldLength }) else {
            throw RequestBody.Unreadable(reason: "field '\(name)' holds an empty or overlong value")
        }
        return values
    }

    /// `number` as an integer when it is one written with a fraction or exponent (`12345.0`, `1e3`): JSON does not
    /// tell the two apart, and clients' encoders write either. Only below 2^53, where a double is exact.
    fileprivate static func wholeNumber(_ number: Double) -> Int64? {
        guard number.isFinite, number == number.rounded(), abs(number) < 9_007_199_254_740_992 else { return nil }
        return Int64(number)
    }

    /// The boolean of the first of `names` present: JSON `true`/`false`, or `true`/`false`/`1`/`0` as text.
    fileprivate func flag(_ names: String...) throws(RequestBody.Unreadable) -> Bool {
        guard let name = names.first(where: { self[$0] != nil }), let field = self[name] else { return false }
        switch field {
        case .json(.bool(let value)): return value
        case .json(.null): return false
        case .json(.integer(let number)) where number == 0 || number == 1: return number == 1
        case .json(.double(let number)) where number == 0 || number == 1: return number == 1
        case .text(let value), .json(.string(let value)):
            switch value.lowercased() {
            case "true", "1": return true
            case "false", "0", "": return false
            default: break
            }
        default: break
        }
        throw RequestBody.Unreadable(reason: "field '\(name)' must be true or false")
    }
}
