import HTTPTypes
import Testing

@testable import ReceiptServer

/// `--trusted-proxies`: which forwarding headers are believed, and what client address they give.
@Suite struct TrustedProxiesTests {
    static func headers(_ fields: [(String, String)]) -> HTTPFields {
        var headers = HTTPFields()
        for (name, value) in fields { headers.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        return headers
    }

    @Test func networksAreParsedStrictly() throws {
        let proxies = try TrustedProxies.parse("127.0.0.1, 10.0.0.0/8,fd00::/8 192.168.1.7/32")
        #expect(proxies.networks.map(\.description) == ["127.0.0.1/32", "10.0.0.0/8", "fd00::/8", "192.168.1.7/32"])
        // The network's host bits are dropped.
        #expect(IPNetwork("10.1.2.3/8")?.description == "10.0.0.0/8")
        for invalid in [
            "10.0.0.0/33", "fd00::/129", "10.0.0.0/", "/8", "10.0.0", "0x7f.0.0.1", "127.1", "017.0.0.1", "example.com",
            "10.0.0.0/8/8", "::1/-1", "10.0.0.0/+8",
        ] {
            #expect(throws: TrustedProxies.InvalidEntry(entry: invalid)) { try TrustedProxies.parse(invalid) }
        }
        #expect(try TrustedProxies.parse("").isEmpty)
    }

    @Test func onlyATrustedPeerIsBelieved() throws {
        let proxies = try TrustedProxies.parse("127.0.0.1/32,10.0.0.0/8")
        let spoofed = Self.headers([("X-Forwarded-For", "203.0.113.9")])
        // Any other peer is itself, whatever it sends.
        #expect(proxies.client(peer: "198.51.100.4", headers: spoofed) == nil)
        #expect(TrustedProxies().client(peer: "127.0.0.1", headers: spoofed) == nil)
        // A trusted peer names the client.
        #expect(proxies.client(peer: "127.0.0.1", headers: spoofed) == "203.0.113.9")
        // Without a header the client is the proxy itself.
        #expect(proxies.client(peer: "127.0.0.1", headers: HTTPFields()) == "127.0.0.1")
        // An IPv4-mapped peer is its IPv4 address.
        #expect(proxies.client(peer: "::ffff:127.0.0.1", headers: spoofed) == "203.0.113.9")
    }

    @Test func theChainIsReadFromTheRightPastTrustedHops() throws {
        let proxies = try TrustedProxies.parse("127.0.0.1/32,10.0.0.0/8")
        // The client's own header comes first; only the hops the trusted proxies added count.
        let chain = Self.headers([("X-Forwarded-For", "1.2.3.4, 203.0.113.9, 10.1.1.1")])
        #expect(proxies.client(peer: "127.0.0.1", headers: chain) == "203.0.113.9")
        // Several header lines are one list.
        let lines = Self.headers([("X-Forwarded-For", "1.2.3.4"), ("X-Forwarded-For", "203.0.113.9")])
        #expect(proxies.client(peer: "127.0.0.1", headers: lines) == "203.0.113.9")
        // Garbage where an address should be stops at the last trusted hop.
        let garbage = Self.headers([("X-Forwarded-For", "1.2.3.4, not-an-address, 10.1.1.1")])
        #expect(proxies.client(peer: "127.0.0.1", headers: garbage) == "10.1.1.1")
        // Every hop trusted: the outermost.
        let inside = Self.headers([("X-Forwarded-For", "10.2.2.2, 10.1.1.1")])
        #expect(proxies.client(peer: "127.0.0.1", headers: inside) == "10.2.2.2")
        // IPv6 in canonical form, so that one client is one budget however it is spelled.
        let v6 = Self.headers([("X-Forwarded-For", "2001:DB8:0:0::1")])
        #expect(proxies.client(peer: "127.0.0.1", headers: v6) == "2001:db8::1")
    }

    @Test func forwardedIsPreferredAndItsFormsAreRead() throws {
        let proxies = try TrustedProxies.parse("127.0.0.1")
        let both = Self.headers([
            ("X-Forwarded-For", "198.51.100.1"), ("Forwarded", #"for=192.0.2.60;proto=http;by=203.0.113.43"#),
        ])
        #expect(proxies.client(peer: "127.0.0.1", headers: both) == "192.0.2.60")
        let v6 = Self.headers([("Forwarded", #"for=198.51.100.17, For="[2001:db8:cafe::17]:4711""#)])
        #expect(proxies.client(peer: "127.0.0.1", headers: v6) == "2001:db8:cafe::17")
        let port = Self.headers([("Forwarded", #"for="192.0.2.43:47011""#)])
        #expect(proxies.client(peer: "127.0.0.1", headers: port) == "192.0.2.43")
        // An obfuscated or unknown identifier is not an address: the proxy is the client.
        let hidden = Self.headers([("Forwarded", "for=_hidden, for=unknown")])
        #expect(proxies.client(peer: "127.0.0.1", headers: hidden) == "127.0.0.1")
    }
}
