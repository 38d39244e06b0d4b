import Crypto
import Foundation
import Synchronization
import X509

/// JWS headers already read, by their exact bytes: the `x5c` certificates parsed, the key naming them in the
/// chain cache, and the signer's P-256 key.
///
/// A StoreKit header is mostly its three base64 certificates (about 5.5 KB), and Apple signs every item of a period
/// with the same ones, so a repeat skips decoding, parsing and hashing them: what is left of a JWS is its payload and
/// its one signature check. Only headers that were read whole and whose certificates parsed are remembered, at most
/// ``maximumHeaderLength`` bytes each and ``capacity`` of them (emptied when full), so the memory held is bounded
/// whatever a client sends.
final class JWSHeaderCache: Sendable {
    /// What a header yields.
    struct Entry: Sendable {
        /// The parsed certificates and their key in ``ChainVerifier``'s cache.
        let carried: (key: Data, certificates: [Certificate])
        /// The signer's key, nil when its certificate does not hold a P-256 key.
        let signerKey: P256.Signing.PublicKey?
    }

    /// Header bytes. Equal keys have equal bytes, all of them; the hash reads the length and the first 512 bytes
    /// (which hold the signer's certificate, serial number included), so a look-up does not hash 5.5 KB. Headers made
    /// to share those bytes only lengthen one bucket of a table bounded by ``capacity``.
    private struct Key: Hashable, Sendable {
        /// Its own copy when stored; a view of the request's text when looking up.
        let bytes: ArraySlice<UInt8>

        func hash(into hasher: inout Hasher) {
            hasher.combine(bytes.count)
            bytes.withUnsafeBytes { hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: $0.prefix(512))) }
        }

        /// All bytes compared with `memcmp` (the element-wise `==` of a slice is several times slower).
        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.bytes.count == rhs.bytes.count
                && lhs.bytes.withUnsafeBytes { left in
                    rhs.bytes.withUnsafeBytes { right in
                        left.count == 0 || memcmp(left.baseAddress!, right.baseAddress!, left.count) == 0
                    }
                }
        }
    }

    /// The longest header remembered (Apple's are about 5.5 KB).
    static let maximumHeaderLength = 16 * 1_024

    let capacity: Int
    private let entries = Mutex<[Key: Entry]>([:])

    init(capacity: Int = 256) {
        self.capacity = capacity
    }

    /// The entry for a header with exactly these bytes.
    func entry(for header: ArraySlice<UInt8>) -> Entry? {
        guard header.count <= Self.maximumHeaderLength else { return nil }
        let key = Key(bytes: header)
        return entries.withLock { $0[key] }
    }

    /// Remembers what a header read whole yielded.
    func remember(_ entry: Entry, for header: ArraySlice<UInt8>) {
        guard header.count <= Self.maximumHeaderLength else { return }
        let key = Key(bytes: ArraySlice(Array(header)))
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[key] = entry
        }
    }

    /// How many headers are remembered.
    var count: Int { entries.withLock { $0.count } }
}
