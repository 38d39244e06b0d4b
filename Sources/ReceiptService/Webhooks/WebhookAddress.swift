import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where a customer's webhook URL may point: https to a public address, never inside the operator's network.
///
/// A URL is checked when an endpoint is added (its scheme, and its host when that is an address or `localhost`), and
/// every delivery checks again the addresses its host resolves to, then connects to the address it checked (so a
/// name that resolves elsewhere by the time of the connection, DNS rebinding, reaches nothing new). An operator of a
/// self-hosted server may allow plain http and private addresses (`--webhook-private-urls allow`).
public enum WebhookAddress {
    /// A host as a URL names it.
    enum Host: Equatable {
        /// A name to resolve.
        case name(String)
        /// An IPv4 (4 bytes) or IPv6 (16 bytes) address, written the usual way.
        case address([UInt8])
        /// A number in a spelling browsers and resolvers read as an address (decimal `2130706433`, octal `0177.1`,
        /// hex `0x7f.1`, short forms): refused, so no check can be fooled by a spelling it reads otherwise.
        case oddNumber
    }

    /// Why `text` may not be a customer's webhook URL, or nil when it may (its host, if a name, is checked again on
    /// every delivery).
    public static func refusal(ofURL text: String, allowsPrivate: Bool) -> String? {
        guard let url = URLComponents(string: text), let scheme = url.scheme?.lowercased(), let host = url.host,
            !host.isEmpty
        else { return "a webhook URL is an https URL with a host" }
        if allowsPrivate { return scheme == "https" || scheme == "http" ? nil : "a webhook URL is an http(s) URL" }
        guard scheme == "https" else { return "a webhook URL is https" }
        switch parse(host: host) {
        case .oddNumber: return "a webhook URL's host is a number in an unusual spelling"
        case .address(let bytes):
            return isPublic(bytes) ? nil : "a webhook URL may not name a private, loopback or other special address"
        case .name(let name):
            let lowered = name.lowercased().trimmingCharacters(in: CharacterSet(charactersIn: "."))
            if lowered == "localhost" || lowered.hasSuffix(".localhost") {
                return "a webhook URL may not name localhost"
            }
            return nil
        }
    }

    /// The host of a URL (without brackets for IPv6) read as a name, an address, or a number in an odd spelling.
    static func parse(host text: String) -> Host {
        var host = text
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.contains(":") {
            // IPv6, no zone (`%eth0`) accepted.
            guard !host.contains("%"), let bytes = address(host, family: AF_INET6) else { return .oddNumber }
            return .address(bytes)
        }
        // WHATWG URL's rule: a host whose last label is a number (decimal, or 0x and hex) is an IPv4 address, in
        // whatever spelling; only the canonical dotted quad is taken.
        let labels = host.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let last = labels.last(where: { !$0.isEmpty }) ?? ""
        let isNumber =
            !last.isEmpty
            && (last.allSatisfy(\.isASCIIDigit)
                || (last.lowercased().hasPrefix("0x") && last.dropFirst(2).allSatisfy(\.isHexDigit)))
        guard isNumber else { return .name(host) }
        let canonical =
            labels.count == 4
            && labels.allSatisfy { label in
                !label.isEmpty && label.count <= 3 && label.allSatisfy(\.isASCIIDigit)
                    && (label == "0" || !label.hasPrefix("0")) && Int(label)! <= 255
            }
        guard canonical, let bytes = address(host, family: AF_INET) else { return .oddNumber }
        return .address(bytes)
    }

    /// The bytes of an address in text, or nil.
    static func address(_ text: String, family: Int32) -> [UInt8]? {
        var buffer = [UInt8](repeating: 0, count: 16)
        let parsed = text.withCString { inet_pton(family, $0, &buffer) }
        guard parsed == 1 else { return nil }
        return Array(buffer.prefix(family == AF_INET ? 4 : 16))
    }

    /// Whether an address is public unicast: not loopback, private (RFC 1918), CGNAT, link-local, ULA, multicast,
    /// documentation, benchmarking, reserved, NAT64, 6to4, Teredo, IPv4-mapped or -compatible, or unspecified.
    public static func isPublic(_ bytes: [UInt8]) -> Bool {
        if bytes.count == 4 { return isPublicIPv4(bytes) }
        guard bytes.count == 16 else { return false }
        let high = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        if bytes[0..<10].allSatisfy({ $0 == 0 }) { return false }  // ::, ::1, IPv4-mapped (::ffff:…), -compatible
        if bytes[0..<12] == [0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0] { return false }  // 64:ff9b::/96 NAT64
        if bytes[0..<6] == [0, 0x64, 0xff, 0x9b, 0, 1] { return false }  // 64:ff9b:1::/48 local NAT64
        if high == 0x0100 && bytes[2..<8].allSatisfy({ $0 == 0 }) { return false }  // 100::/64 discard
        if high == 0x2001 && bytes[2] < 0x02 { return false }  // 2001::/23: Teredo, benchmarking, ORCHID…
        if high == 0x2001 && bytes[2] == 0x0d && bytes[3] == 0xb8 { return false }  // 2001:db8::/32 documentation
        if high == 0x2002 { return false }  // 6to4
        if high == 0x3fff && bytes[2] < 0x10 { return false }  // 3fff::/20 documentation
        if bytes[0] & 0xfe == 0xfc { return false }  // fc00::/7 ULA
        if high & 0xffc0 == 0xfe80 || high & 0xffc0 == 0xfec0 { return false }  // link-local, site-local
        if bytes[0] == 0xff { return false }  // multicast
        return high & 0xe000 == 0x2000  // 2000::/3, global unicast
    }

    private static func isPublicIPv4(_ b: [UInt8]) -> Bool {
        switch (b[0], b[1], b[2]) {
        case (0, _, _), (10, _, _), (127, _, _): false  // this network, private, loopback
        case (100, 64...127, _): false  // CGNAT
        case (169, 254, _): false  // link-local
        case (172, 16...31, _): false  // private
        case (192, 0, 0), (192, 0, 2), (192, 88, 99): false  // IETF, documentation, 6to4 relay
        case (192, 168, _): false  // private
        case (198, 18...19, _): false  // benchmarking
        case (198, 51, 100), (203, 0, 113): false  // documentation
        case (224...255, _, _): false  // multicast, reserved, broadcast
        default: true
        }
    }

    /// Every address `host` resolves to (blocking: call it off the event loops).
    static func resolve(_ host: String) -> [[UInt8]] {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var results: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, nil, &hints, &results) == 0, let first = results else { return [] }
        defer { freeaddrinfo(first) }
        var addresses: [[UInt8]] = []
        var next: UnsafeMutablePointer<addrinfo>? = first
        while let info = next {
            if info.pointee.ai_family == AF_INET, let raw = info.pointee.ai_addr {
                raw.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                    var address = pointer.pointee.sin_addr
                    addresses.append(withUnsafeBytes(of: &address) { Array($0) })
                }
            } else if info.pointee.ai_family == AF_INET6, let raw = info.pointee.ai_addr {
                raw.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                    var address = pointer.pointee.sin6_addr
                    addresses.append(withUnsafeBytes(of: &address) { Array($0) })
                }
            }
            next = info.pointee.ai_next
        }
        return addresses
    }

    /// The address to connect to for `host`: a literal address as it is, else the first address the name resolves
    /// to, when every one of them is public (a name with one private address among public ones is refused: which
    /// one a connection takes is not ours to choose). Nil, with the reason for the customer, otherwise.
    public static func checkedAddress(ofHost host: String) -> (address: String?, refusal: String?) {
        let addresses: [[UInt8]]
        switch parse(host: host) {
        case .oddNumber: return (nil, "the host is a number in an unusual spelling")
        case .address(let bytes): addresses = [bytes]
        case .name(let name): addresses = resolve(name)
        }
        guard let first = addresses.first else { return (nil, "the host does not resolve") }
        guard addresses.allSatisfy(isPublic) else { return (nil, "the host resolves to a non-public address") }
        return (text(of: first), nil)
    }

    /// An address's text.
    static func text(of bytes: [UInt8]) -> String? {
        var buffer = [CChar](repeating: 0, count: 64)
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        let written = bytes.withUnsafeBytes { inet_ntop(family, $0.baseAddress, &buffer, 64) }
        guard written != nil else { return nil }
        return String(cString: buffer)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
