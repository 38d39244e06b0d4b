import Crypto
import Foundation
import X509

/// Verifies StoreKit 2 JWS as Apple's App Store Server Library does: the ES256 signature by the `x5c` leaf, then the
/// chain at the date Apple signed the item.
///
/// The chain is three certificates (leaf ← intermediate ← root) with Apple's marker extensions on the leaf and the
/// intermediate, whatever the root (Apple Root CA - G3, or a test root an app allows); Xcode's StoreKit testing signs
/// with one self-signed certificate, accepted only as a configured test anchor. The date is `signedDate`, except for
/// an AppTransaction, which Apple signs at its `receiptCreationDate`, and a notification without one, which takes its
/// first nested item's. A notification's own chain is verified before its nested items (then verified too), and only
/// a header whose chain holds is remembered.
struct JWSVerifier: Sendable {
    let chains: ChainVerifier
    let headers: JWSHeaderCache

    func verify(_ text: [UInt8], testData: TestDataTrust) throws -> VerifiedReceipt {
        var nested: [String: VerifiedReceipt] = [:]
        return try verify(text, testData: testData, depth: 0, nested: &nested)
    }

    /// The keys of a notification's signed items: under `data` (most types) or `appData` (`RESCIND_CONSENT`).
    static let nestedKeys = [
        ("data", "signedTransactionInfo"), ("data", "signedRenewalInfo"), ("appData", "signedAppTransactionInfo"),
    ]

    /// Verifies `text`; a notification's signed items are verified too and put in `nested` under their keys.
    func verify(_ text: [UInt8], testData: TestDataTrust, depth: Int, nested: inout [String: VerifiedReceipt]) throws
        -> VerifiedReceipt
    {
        let jws: SignedJWS
        let header: JWSHeaderCache.Entry
        let headerPart = SignedJWS.headerPart(of: text)
        var headerIsNew = false
        if let headerPart, let known = headers.entry(for: headerPart) {
            jws = try SignedJWS(compact: text, headerIsKnown: true)
            header = known
        } else {
            jws = try SignedJWS(compact: text)
            guard jws.certificates.count == 3 || jws.certificates.count == 1 else {
                throw ReceiptError(
                    .invalidChain,
                    "a StoreKit x5c holds three certificates (Xcode's one), found \(jws.certificates.count)")
            }
            let carried = try chains.certificates(jws.certificates)
            header = JWSHeaderCache.Entry(
                carried: carried, signerKey: P256.Signing.PublicKey(carried.certificates[0].publicKey))
            headerIsNew = true
        }
        let policy: ChainPolicy = header.carried.certificates.count == 3 ? .storeKit : .xcodeStoreKit
        let carried = header.carried
        guard let signerKey = header.signerKey, jws.isSigned(by: signerKey) else {
            throw ReceiptError(.invalidSignature, "the JWS signature does not verify with its x5c leaf key")
        }
        let payload = jws.payload
        let kind = Self.kind(of: payload)

        var signedDate = Self.signingDate(of: payload, kind: kind)
        // A notification states its app under `data`; under `appData` (RESCIND_CONSENT), `summary` (RENEWAL_EXTENSION's
        // SUMMARY) or `externalPurchaseToken` (EXTERNAL_PURCHASE_TOKEN) when it has no `data`.
        let data = payload["data"] ?? payload["appData"] ?? payload["summary"] ?? payload["externalPurchaseToken"]
        var items: [(key: String, text: String)] = []
        if kind == .notification {
            guard depth == 0 else { throw ReceiptError(.malformedJWS, "a notification cannot nest a notification") }
            for (container, key) in Self.nestedKeys {
                guard let item = payload[container]?[key] else { continue }
                guard case .string(let text) = item else {
                    throw ReceiptError(.malformedJWS, "the notification's \(key) is not a string")
                }
                items.append((key, text))
            }
            // A notification without a signing date is checked at its first item's, read (not yet verified) from
            // the item: the outer chain is verified before any nested item costs a signature check.
            if signedDate == nil, let first = items.first,
                let item = try? SignedJWS(compact: Array(first.text.utf8), headerIsKnown: true)
            {
                signedDate = Self.signingDate(of: item.payload, kind: Self.kind(of: item.payload))
            }
        }
        guard let signedDate else {
            throw ReceiptError(
                .malformedJWS,
                kind == .appTransaction
                    ? "the AppTransaction has no receiptCreationDate" : "the JWS payload has no signedDate")
        }

        let chain = try chains.verify(
            leaf: 0, of: carried, policy: policy,
            at: Date(timeIntervalSince1970: TimeInterval(signedDate) / 1_000), testData: testData)
        // Only a header whose chain holds is remembered: a stranger's certificates take no place in the cache.
        if headerIsNew, let headerPart { headers.remember(header, for: headerPart) }
        let environment = chain.anchorIsApple ? try Self.environment(of: payload) : .xcode
        for (key, text) in items {
            var none: [String: VerifiedReceipt] = [:]
            nested[key] = try verify(Array(text.utf8), testData: testData, depth: depth + 1, nested: &none)
        }
        return VerifiedReceipt(
            kind: kind, environment: environment,
            bundleID: (payload["bundleId"] ?? data?["bundleId"])?.stringValue ?? "", receipt: payload,
            signingDate: signedDate, isTestData: !chain.anchorIsApple)
    }

    /// The date an item is signed at: its `signedDate`, an AppTransaction's `receiptCreationDate`.
    static func signingDate(of payload: JSONObject, kind: VerifiedReceipt.Kind) -> Int64? {
        milliseconds(payload[kind == .appTransaction ? "receiptCreationDate" : "signedDate"])
    }

    /// The environment an Apple-signed item states: its `environment` (a notification's under `data`, `appData` or
    /// `summary`), an AppTransaction's `receiptType`, or, for an external purchase token (which states none), its id as
    /// Apple's library reads it (`SANDBOX…` is the sandbox). An item that states none, or one Apple does not sign in,
    /// is refused: never taken as Production.
    static func environment(of payload: JSONObject) throws -> StoreEnvironment {
        let data = payload["data"] ?? payload["appData"] ?? payload["summary"]
        var name = (payload["environment"] ?? data?["environment"] ?? payload["receiptType"])?.stringValue
        if name == nil, case .object(let token)? = payload["externalPurchaseToken"] {
            name = token["externalPurchaseId"]?.stringValue?.hasPrefix("SANDBOX") == true ? "Sandbox" : "Production"
        }
        guard let name, let environment = StoreEnvironment(rawValue: name), environment != .xcode else {
            throw ReceiptError(.malformedJWS, "the item states no environment Apple signs in")
        }
        return environment
    }

    static func kind(of payload: JSONObject) -> VerifiedReceipt.Kind {
        if payload["notificationType"] != nil { return .notification }
        if payload["autoRenewStatus"] != nil || payload["autoRenewProductId"] != nil { return .signedRenewalInfo }
        // Since 2025 Apple's transactions and renewal infos carry `appTransactionId` too: a transaction is told by its
        // `transactionId`, an app transaction by having none.
        if payload["transactionId"] == nil, payload["receiptType"] != nil || payload["appTransactionId"] != nil {
            return .appTransaction
        }
        return .signedTransaction
    }

    private static func milliseconds(_ value: JSONValue?) -> Int64? {
        switch value {
        case .integer(let number)?: return number
        case .double(let number)? where number.isFinite && abs(number) < 1e17: return Int64(number)
        default: return nil
        }
    }
}
