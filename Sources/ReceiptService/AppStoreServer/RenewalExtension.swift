import Foundation
import ReceiptCore

/// A subscription renewal-date extension as Apple takes it ([Extend a Subscription Renewal Date](https://developer.apple.com/documentation/appstoreserverapi/extend-a-subscription-renewal-date),
/// and for all active subscribers of a product): how many days, why, and the caller's identifier of the request.
public struct RenewalExtension: Sendable, Equatable {
    /// Apple's `extendReasonCode`.
    public enum Reason: Int, Sendable, CaseIterable {
        case undeclared = 0
        case customerSatisfaction = 1
        case other = 2
        case serviceIssueOrOutage = 3

        /// The name the API and the CLI take.
        public var name: String {
            switch self {
            case .undeclared: "undeclared"
            case .customerSatisfaction: "customer_satisfaction"
            case .other: "other"
            case .serviceIssueOrOutage: "service_issue_or_outage"
            }
        }

        /// A reason by name or by Apple's code (`0`–`3`).
        public init?(text: String) {
            if let code = Int(text), let reason = Reason(rawValue: code) {
                self = reason
            } else if let reason = Reason.allCases.first(where: { $0.name == text }) {
                self = reason
            } else {
                return nil
            }
        }
    }

    /// Apple's most days of one extension.
    public static let maximumDays = 90
    /// Apple's longest request identifier.
    public static let maximumIdentifierLength = 128

    /// Days to extend by, 1–90.
    public let days: Int
    /// Why.
    public let reason: Reason
    /// The caller's identifier of the request, unique per request (Apple's `requestIdentifier`).
    public let requestIdentifier: String

    /// Creates an extension; throws ``ServiceError/Code/invalidArgument`` saying what is wrong.
    public init(days: Int, reason: Reason, requestIdentifier: String) throws {
        guard (1...Self.maximumDays).contains(days) else {
            throw ServiceError(.invalidArgument, "extend_by_days must be from 1 to \(Self.maximumDays) (Apple's limit)")
        }
        guard (1...Self.maximumIdentifierLength).contains(requestIdentifier.utf8.count),
            requestIdentifier.utf8.allSatisfy({ (0x21...0x7E).contains($0) })
        else {
            throw ServiceError(
                .invalidArgument,
                "request_identifier must be 1 to \(Self.maximumIdentifierLength) printable ASCII characters")
        }
        self.days = days
        self.reason = reason
        self.requestIdentifier = requestIdentifier
    }

    /// The body of Extend a Subscription Renewal Date, in Apple's field order.
    public var body: [UInt8] {
        var object = JSONObject(capacity: 3)
        object.append("extendByDays", .integer(Int64(days)))
        object.append("extendReasonCode", .integer(Int64(reason.rawValue)))
        object.append("requestIdentifier", .string(requestIdentifier))
        return JSONValue.object(object).encoded
    }

    /// The body of the mass extension of `productID`, limited to `storefronts` when any are named.
    public func massBody(productID: String, storefronts: [String]) -> [UInt8] {
        var object = JSONObject(capacity: 5)
        object.append("extendByDays", .integer(Int64(days)))
        object.append("extendReasonCode", .integer(Int64(reason.rawValue)))
        object.append("requestIdentifier", .string(requestIdentifier))
        if !storefronts.isEmpty { object.append("storefrontCountryCodes", .array(storefronts.map { .string($0) })) }
        object.append("productId", .string(productID))
        return JSONValue.object(object).encoded
    }

    /// The storefronts of a mass extension: ISO 3166-1 alpha-3 codes, upper-cased; throws naming a bad one.
    public static func storefronts(_ codes: [String]) throws -> [String] {
        try codes.map { code in
            let upper = code.uppercased()
            guard upper.utf8.count == 3, upper.utf8.allSatisfy({ (0x41...0x5A).contains($0) }) else {
                throw ServiceError(
                    .invalidArgument, "storefront_country_codes are ISO 3166-1 alpha-3 codes (USA, FRA, …)")
            }
            return upper
        }
    }

    /// Apple's answer to one extension.
    public struct Result: Sendable, Equatable {
        /// Whether Apple extended it.
        public var success: Bool
        /// The subscription's new expiry, milliseconds since 1970.
        public var effectiveDate: Int64?
        /// The period extended.
        public var webOrderLineItemID: String?

        /// Creates a result.
        public init(success: Bool, effectiveDate: Int64?, webOrderLineItemID: String?) {
            self.success = success
            self.effectiveDate = effectiveDate
            self.webOrderLineItemID = webOrderLineItemID
        }
    }

    /// Where Apple is with a mass extension.
    public struct MassStatus: Sendable, Equatable {
        /// Whether Apple has finished.
        public var complete: Bool
        /// When it finished, milliseconds since 1970.
        public var completeDate: Int64?
        /// Subscriptions extended.
        public var succeeded: Int?
        /// Subscriptions Apple could not extend.
        public var failed: Int?

        /// Creates a status.
        public init(complete: Bool, completeDate: Int64?, succeeded: Int?, failed: Int?) {
            self.complete = complete
            self.completeDate = completeDate
            self.succeeded = succeeded
            self.failed = failed
        }
    }
}
