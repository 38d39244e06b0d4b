import Crypto
import Foundation
import Synchronization
import SwiftASN1
import X509

/// What a chain must satisfy beyond ending at an anchor: its length, and Apple's marker extensions.
struct ChainPolicy: Sendable, Hashable {
    /// The extension Apple puts on the signing (leaf) certificate, if the format has one.
    let leafMarkerOID: ASN1ObjectIdentifier?
    /// The extension Apple puts on the intermediate certificate.
    let intermediateMarkerOID: ASN1ObjectIdentifier?
    /// The chain lengths accepted, anchor included.
    let lengths: ClosedRange<Int>
    /// Whether the markers are required also when the chain ends at a test anchor. Apple's App Store Server Library
    /// requires them on every StoreKit chain whatever its root; receipts signed under a test root (Xcode) carry none.
    let marksTestChains: Bool

    /// Unified receipts: Mac App Store and iTunes Store Receipt Signing ← Apple WWDR ← Apple Root CA.
    static let unifiedReceipt = ChainPolicy(
        leafMarkerOID: [1, 2, 840, 113_635, 100, 6, 11, 1], intermediateMarkerOID: [1, 2, 840, 113_635, 100, 6, 2, 1],
        lengths: 1...4, marksTestChains: false)
    /// StoreKit 2 JWS: leaf ← Apple WWDR G6 ← Apple Root CA - G3, exactly three, markers under any root.
    static let storeKit = ChainPolicy(
        leafMarkerOID: [1, 2, 840, 113_635, 100, 6, 11, 1], intermediateMarkerOID: [1, 2, 840, 113_635, 100, 6, 2, 1],
        lengths: 3...3, marksTestChains: true)
    /// Xcode's StoreKit testing JWS: one self-signed certificate that is itself a configured (test) anchor.
    static let xcodeStoreKit = ChainPolicy(
        leafMarkerOID: nil, intermediateMarkerOID: nil, lengths: 1...1, marksTestChains: false)
}

/// A validated chain: which anchor it ends at and the validity window of every certificate in it.
struct ValidatedChain: Sendable {
    let leaf: Certificate
    let anchorIsApple: Bool
    /// The anchor's SHA-256 fingerprint, uppercase hex.
    let anchorFingerprint: String
    /// (notBefore, notAfter) of every certificate on the path, anchor included.
    let windows: [(Date, Date)]
}

/// Builds and checks certificate chains, remembering the expensive part (signature checks) per set of certificates.
///
/// The cache key is SHA-256 over the certificates' DER; an entry holds the path's validity windows, which are
/// compared with the signing date on every call, so a cached chain is never accepted outside its dates.
final class ChainVerifier: Sendable {
    let anchors: TrustAnchors
    private let capacity: Int
    private let cache = Mutex<[Data: Entry]>([:])

    /// What is remembered for one set of carried certificates.
    private struct Entry: Sendable {
        let certificates: [Certificate]
        var chains: [ChainKey: ValidatedChain] = [:]
    }

    private struct ChainKey: Hashable, Sendable {
        let leaf: Int
        let policy: ChainPolicy
    }

    init(anchors: TrustAnchors, capacity: Int = 1_024) {
        self.anchors = anchors
        self.capacity = capacity
    }

    /// How many sets of carried certificates are remembered (with their validated chains).
    var cachedCount: Int { cache.withLock { $0.count } }

    /// The carried certificates parsed (remembered by the SHA-256 of their DER once a chain of them validates) and the
    /// key naming them.
    func certificates(_ carried: [[UInt8]]) throws -> (key: Data, certificates: [Certificate]) {
        var hasher = SHA256()
        for der in carried { hasher.update(data: SHA256.hash(data: der).withUnsafeBytes { Data($0) }) }
        let key = Data(hasher.finalize())
        if let entry = cache.withLock({ $0[key] }) { return (key, entry.certificates) }
        let certificates: [Certificate] = try carried.map { der in
            do {
                return try Certificate(derEncoded: der)
            } catch {
                throw ReceiptError(.malformedContainer, "a carried certificate is not DER X.509")
            }
        }
        // Remembered only with a chain that holds (``verify(leaf:of:policy:at:testData:)``): a stranger's
        // certificates evict nothing.
        return (key, certificates)
    }

    /// Finds a path from `certificates[leaf]` to an anchor through the other certificates, checks every signature,
    /// CA flag and (for Apple anchors) marker extension, remembers that, then checks every certificate's validity
    /// at `date` (on every call).
    func verify(
        leaf: Int, of carried: (key: Data, certificates: [Certificate]), policy: ChainPolicy, at date: Date,
        testData: TestDataTrust
    ) throws -> ValidatedChain {
        let chainKey = ChainKey(leaf: leaf, policy: policy)
        let chain: ValidatedChain
        if let cached = cache.withLock({ $0[carried.key]?.chains[chainKey] }) {
            chain = cached
        } else {
            chain = try build(leaf: carried.certificates[leaf], pool: carried.certificates, policy: policy)
            cache.withLock { entries in
                if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
                var entry = entries[carried.key] ?? Entry(certificates: carried.certificates)
                entry.chains[chainKey] = chain
                entries[carried.key] = entry
            }
        }
        try testData.check(anchor: chain.anchorFingerprint, isApple: chain.anchorIsApple)
        try Self.check(chain.windows, at: date)
        return chain
    }

    private func build(leaf: Certificate, pool: [Certificate], policy: ChainPolicy) throws -> ValidatedChain {
        var path = [leaf]
        var current = leaf
        while true {
            if let anchor = anchors.anchor(issuing: current) {
                if anchor.certificate != current { path.append(anchor.certificate) }
                guard policy.lengths.contains(path.count) else {
                    throw ReceiptError(
                        .invalidChain,
                        "the chain has \(path.count) certificates, expected \(policy.lengths.lowerBound)"
                            + (policy.lengths.count > 1 ? " to \(policy.lengths.upperBound)" : ""))
                }
                // Apple chains must carry Apple's markers and CA flags. Test chains (opt-in per app) are checked for
                // signatures and dates, and for the markers where the policy says so: test CAs in the wild often
                // omit basic constraints.
                if anchor.isApple || policy.marksTestChains { try checkApplePath(path, policy: policy) }
                if anchor.isApple { try checkAuthorities(path) }
                return ValidatedChain(
                    leaf: leaf, anchorIsApple: anchor.isApple, anchorFingerprint: anchor.fingerprint,
                    windows: path.map { ($0.notValidBefore, $0.notValidAfter) })
            }
            guard path.count < policy.lengths.upperBound else {
                throw ReceiptError(
                    .untrustedRoot, "no configured anchor within \(policy.lengths.upperBound) certificates")
            }
            let issuer = pool.first { candidate in
                candidate != current && !path.contains(candidate) && candidate.subject == current.issuer
                    && candidate.publicKey.isValidSignature(current.signature, for: current)
            }
            guard let issuer else {
                let named = pool.contains { $0.subject == current.issuer && $0 != current }
                throw ReceiptError(
                    named ? .invalidChain : .untrustedRoot,
                    named
                        ? "a certificate's signature does not verify with its issuer's key"
                        : "the chain does not reach a configured trust anchor")
            }
            path.append(issuer)
            current = issuer
        }
    }

    /// Checks an iOS 6 receipt leaf: issued (and signed) by a configured anchor, every certificate valid at `date`.
    func verifyLegacy(_ leaf: LegacyCertificate, at date: Date, testData: TestDataTrust) throws -> TrustAnchors.Anchor {
        guard leaf.signatureAlgorithm == "1.2.840.113549.1.1.5" || leaf.signatureAlgorithm == "1.2.840.113549.1.1.11"
        else { throw ReceiptError(.unsupportedAlgorithm, "the receipt certificate's signature algorithm") }
        let algorithm: Certificate.SignatureAlgorithm =
            leaf.signatureAlgorithm == "1.2.840.113549.1.1.5" ? .sha1WithRSAEncryption : .sha256WithRSAEncryption
        guard let anchor = anchors.anchors.first(where: { $0.certificate.subject == leaf.issuer }) else {
            throw ReceiptError(.untrustedRoot, "the receipt certificate's issuer is not a configured anchor")
        }
        guard
            anchor.certificate.publicKey.isValidSignature(
                leaf.signature, for: leaf.tbsCertificate, signatureAlgorithm: algorithm)
        else { throw ReceiptError(.invalidChain, "the receipt certificate is not signed by its issuer") }
        try testData.check(anchor: anchor.fingerprint, isApple: anchor.isApple)
        try Self.check(
            [
                (leaf.notValidBefore, leaf.notValidAfter),
                (anchor.certificate.notValidBefore, anchor.certificate.notValidAfter),
            ], at: date)
        return anchor
    }

    /// Every certificate's validity window must contain the signing date.
    private static func check(_ windows: [(Date, Date)], at date: Date) throws {
        for (notBefore, notAfter) in windows {
            if date < notBefore {
                throw ReceiptError(.notYetValidAtSigningDate, "a certificate was not yet valid at the signing date")
            }
            if date > notAfter {
                throw ReceiptError(.expiredAtSigningDate, "a certificate had expired at the signing date")
            }
        }
    }

    /// Apple's marker extensions: on the leaf, and on the certificate that issued it.
    private func checkApplePath(_ path: [Certificate], policy: ChainPolicy) throws {
        if let marker = policy.leafMarkerOID, path[0].extensions[oid: marker] == nil {
            throw ReceiptError(.missingMarkerOID, "the signing certificate lacks Apple's marker \(marker)")
        }
        if let marker = policy.intermediateMarkerOID {
            guard path.count >= 3, path[1].extensions[oid: marker] != nil else {
                throw ReceiptError(.missingMarkerOID, "the intermediate certificate lacks Apple's marker \(marker)")
            }
        }
    }

    /// Every certificate that issued another must be a CA.
    private func checkAuthorities(_ path: [Certificate]) throws {
        for issuer in path.dropFirst() {
            let constraints: BasicConstraints?
            do {
                constraints = try issuer.extensions.basicConstraints
            } catch {
                throw ReceiptError(.invalidChain, "an issuer's basic constraints are malformed")
            }
            guard case .isCertificateAuthority = constraints else {
                throw ReceiptError(.invalidChain, "an issuing certificate is not a certificate authority")
            }
        }
    }
}
