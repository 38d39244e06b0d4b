import HTTPTypes

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// An IP network in CIDR notation (`10.0.0.0/8`, `fd00::/8`); a bare address is a network of one.
public struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    /// The network's address: 4 bytes (IPv4) or 16 (IPv6).
    let bytes: [UInt8]
    /// The prefix length in bits.
    let prefix: Int

    /// The network `text` names, or nil when it is not an address with an optional prefix length within range.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let bytes = IPAddressText.parse(String(parts[0])) else { return nil }
        let bits = bytes.count * 8
        var prefix = bits
        if parts.count == 2 {
            guard parts[1].allSatisfy({ $0 >= "0" && $0 <= "9" }), let given = Int(parts[1]), (0...bits).contains(given)
            else {
                return nil
            }
            prefix = given
        }
        self.bytes = Self.masked(bytes, prefix)
        self.prefix = prefix
    }

    /// Whether `address` (4 or 16 bytes) lies in the network.
    func contains(_ address: [UInt8]) -> Bool {
        address.count == bytes.count && Self.masked(address, prefix) == bytes
    }

    private static func masked(_ bytes: [UInt8], _ prefix: Int) -> [UInt8] {
        bytes.enumerated().map { index, byte in
            let kept = min(8, max(0, prefix - index * 8))
            return kept == 8 ? byte : byte & ~(UInt8(0xff) >> kept)
        }
    }

    public var description: String { "\(IPAddressText.format(bytes))/\(prefix)" }
}

/// IP addresses as text and bytes, by the C library's parser: IPv4 in dotted decimal only (no octal, hex or short
/// forms), IPv6 in any of its spellings; an IPv4-mapped IPv6 address is its IPv4 address.
enum IPAddressText {
    static func parse(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        var v4 = [UInt8](repeating: 0, count: 4)
        if inet_pton(AF_INET, text, &v4) == 1 { return v4 }
        var bytes = [UInt8](repeating: 0, count: 16)
        guard inet_pton(AF_INET6, text, &bytes) == 1 else { return nil }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff { return Array(bytes[12...]) }
        return bytes
    }

    static func format(_ bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let written = bytes.withUnsafeBytes { raw in
            inet_ntop(family, raw.baseAddress, &buffer, socklen_t(buffer.count))
        }
        guard written != nil else { return "unknown" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

/// The reverse proxies whose forwarding headers are believed (`--trusted-proxies`): a request whose TCP peer is one
/// of them is from the address its `Forwarded` (or, without one, `X-Forwarded-For`) header names, read from the
/// right past every trusted hop, so that a client cannot choose its address by sending a header of its own. A
/// request from any other peer is from the peer, whatever it sends.
public struct TrustedProxies: Sendable, Equatable {
    /// The trusted networks; none: every client is its TCP peer.
    public let networks: [IPNetwork]

    /// Creates the list.
    public init(_ networks: [IPNetwork] = []) {
        self.networks = networks
    }

    /// An entry of the list that is not an address or a network.
    public struct InvalidEntry: Error, Equatable {
        public let entry: String
    }

    /// The list `text` names (CIDRs separated by commas or spaces); throws ``InvalidEntry`` for the first entry that
    /// is not one.
    public static func parse(_ text: String) throws(InvalidEntry) -> TrustedProxies {
        var networks: [IPNetwork] = []
        for entry in text.split(whereSeparator: { $0 == "," || $0 == " " }) {
            guard let network = IPNetwork(String(entry)) else { throw InvalidEntry(entry: String(entry)) }
            networks.append(network)
        }
        return TrustedProxies(networks)
    }

    /// Whether any proxy is trusted.
    public var isEmpty: Bool { networks.isEmpty }

    func trusts(_ address: [UInt8]) -> Bool { networks.contains { $0.contains(address) } }

    /// The longest forwarding chain read: a longer one is cut to its last hops.
    static let maximumHops = 32

    /// The client's address for a request from `peer` with `headers`, in canonical form; nil when the peer is not a
    /// trusted proxy (the caller then uses the peer) or is unknown.
    func client(peer: String?, headers: HTTPFields) -> String? {
        guard !networks.isEmpty, let peer, let peerBytes = IPAddressText.parse(peer), trusts(peerBytes) else {
            return nil
        }
        let hops = Self.forwardedHops(headers)
        var client = peerBytes
        // From the nearest hop outward: each hop a trusted proxy named passes its word on; the first one that is
        // not trusted (or not an address) ends the chain.
        for hop in hops.reversed() {
            guard let bytes = IPAddressText.parse(hop) else { break }
            client = bytes
            guard trusts(bytes) else { break }
        }
        return IPAddressText.format(client)
    }

    /// The addresses the forwarding headers list, outermost first: `Forwarded`'s `for=` values when there is such a
    /// header (RFC 7239: quoted, bracketed IPv6, with a port or not), else `X-Forwarded-For`'s.
    static func forwardedHops(_ headers: HTTPFields) -> [String] {
        let forwarded = headers[values: .forwarded]
        if !forwarded.isEmpty {
            var hops: [String] = []
            for element in forwarded.joined(separator: ",").split(separator: ",").suffix(maximumHops) {
                let pair = element.split(separator: ";").first { $0.trimmingSpaces.lowercased().hasPrefix("for=") }
                hops.append(pair.map { address(inForwarded: String($0.trimmingSpaces.dropFirst(4))) } ?? "")
            }
            return hops
        }
        return headers[values: .xForwardedFor].joined(separator: ",").split(separator: ",").suffix(maximumHops).map {
            String($0.trimmingSpaces)
        }
    }

    /// `for=`'s value without quotes, brackets and port: `"[2001:db8::1]:4711"` → `2001:db8::1`, `192.0.2.1:80` →
    /// `192.0.2.1`.
    static func address(inForwarded value: String) -> String {
        var text = Substring(value)
        if text.hasPrefix("\""), text.hasSuffix("\""), text.count >= 2 { text = text.dropFirst().dropLast() }
        if text.hasPrefix("[") {
            guard let end = text.firstIndex(of: "]") else { return "" }
            return String(text[text.index(after: text.startIndex)..<end])
        }
        if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") { return String(text[..<colon]) }
        return String(text)
    }
}

extension HTTPField.Name {
    /// RFC 7239's `Forwarded`.
    static let forwarded = HTTPField.Name("Forwarded")!
    /// The de facto `X-Forwarded-For`.
    static let xForwardedFor = HTTPField.Name("X-Forwarded-For")!
}

extension Substring {
    fileprivate var trimmingSpaces: Substring {
        var text = self
        while text.first == " " || text.first == "\t" { text = text.dropFirst() }
        while text.last == " " || text.last == "\t" { text = text.dropLast() }
        return text
    }
}
