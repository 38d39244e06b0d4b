/// Verifies every Apple format locally: unified receipts, iOS 6 transaction receipts and StoreKit 2 JWS.
///
/// Pure: no I/O, no clock. Each item is checked at its own signing date (a receipt's creation date, a JWS's
/// `signedDate`), as Apple prescribes. Chain signature checks are remembered per set of certificates (bounded), so a
/// repeat costs one signature check; validity dates are compared on every call.
public struct ReceiptVerifier: Sendable {
    let chains: ChainVerifier
    let headers: JWSHeaderCache

    /// Creates a verifier that trusts `anchors` only.
    public init(anchors: TrustAnchors, cacheCapacity: Int = 1_024) {
        chains = ChainVerifier(anchors: anchors, capacity: cacheCapacity)
        headers = JWSHeaderCache(capacity: max(1, cacheCapacity / 4))
    }

    /// Verifies decoded input; throws ``ReceiptError`` naming the failed check.
    ///
    /// - Parameter allowTestData: accept items that chain to any non-Apple anchor (Xcode StoreKit testing).
    public func verify(_ input: ReceiptInput, allowTestData: Bool = false) throws -> VerifiedReceipt {
        try verify(input, testData: TestDataTrust(allowingAny: allowTestData))
    }

    /// Verifies decoded input, accepting test data from the anchors `testData` names; throws ``ReceiptError``
    /// naming the failed check.
    public func verify(_ input: ReceiptInput, testData: TestDataTrust) throws -> VerifiedReceipt {
        switch input.kind {
        case .unifiedReceipt:
            let (payload, chain) = try UnifiedReceiptVerifier(chains: chains).verify(
                input.bytes, testData: testData)
            return VerifiedReceipt(
                kind: .unifiedReceipt, environment: chain.anchorIsApple ? payload.environment : .xcode,
                bundleID: payload.bundleID, receipt: payload.json, signingDate: payload.creationDate,
                isTestData: !chain.anchorIsApple)
        case .transactionReceipt:
            return try TransactionReceiptVerifier(chains: chains).verify(input.bytes, testData: testData)
        case .jws:
            return try JWSVerifier(chains: chains, headers: headers).verify(input.bytes, testData: testData)
        }
    }
}

extension ReceiptVerifier {
    /// Verifies an App Store Server Notification V2 `signedPayload` and every signed item in it, each at its own
    /// signing date; throws ``ReceiptError`` naming the failed check (`malformedJWS` for text that is not a
    /// notification).
    public func verifyNotification(_ signedPayload: [UInt8], allowTestData: Bool = false) throws
        -> ServerNotification
    {
        try verifyNotification(signedPayload, testData: TestDataTrust(allowingAny: allowTestData))
    }

    /// Verifies a notification's `signedPayload`, accepting test data from the anchors `testData` names.
    public func verifyNotification(_ signedPayload: [UInt8], testData: TestDataTrust) throws -> ServerNotification {
        let jws = JWSVerifier(chains: chains, headers: headers)
        var nested: [String: VerifiedReceipt] = [:]
        let verified = try jws.verify(signedPayload, testData: testData, depth: 0, nested: &nested)
        guard verified.kind == .notification else {
            throw ReceiptError(.malformedJWS, "the signed payload is not a notification")
        }
        return try ServerNotification(verified: verified, nested: nested)
    }
}
