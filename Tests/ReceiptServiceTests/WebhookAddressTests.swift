import Testing

@testable import ReceiptService

/// Customer-set webhook URLs cannot reach inside: one case per refused form, and what passes.
struct WebhookAddressTests {
    static func refusal(_ url: String) -> String? { WebhookAddress.refusal(ofURL: url, allowsPrivate: false) }

    @Test(arguments: [
        "http://hooks.example.com/x",  // plain http
        "ftp://hooks.example.com/x",
        "https://127.0.0.1/x", "https://127.9.9.9/x",  // loopback
        "https://10.1.2.3/x", "https://172.16.0.1/x", "https://172.31.255.255/x", "https://192.168.1.1/x",  // private
        "https://100.64.0.1/x", "https://100.127.255.255/x",  // CGNAT
        "https://169.254.169.254/latest/meta-data",  // link-local (cloud metadata)
        "https://0.0.0.0/x", "https://0.1.2.3/x",  // this network
        "https://224.0.0.1/x", "https://240.0.0.1/x", "https://255.255.255.255/x",  // multicast, reserved, broadcast
        "https://192.0.2.1/x", "https://198.51.100.1/x", "https://203.0.113.1/x", "https://198.18.0.1/x",
        "https://[::1]/x", "https://[::]/x",  // loopback, unspecified
        "https://[::ffff:127.0.0.1]/x", "https://[::ffff:8.8.8.8]/x", "https://[::ffff:7f00:1]/x",  // IPv4-mapped
        "https://[::127.0.0.1]/x",  // IPv4-compatible
        "https://[fc00::1]/x", "https://[fd12:3456::1]/x",  // ULA
        "https://[fe80::1]/x", "https://[fe80::1%25eth0]/x",  // link-local, with a zone
        "https://[fec0::1]/x", "https://[ff02::1]/x",  // site-local, multicast
        "https://[64:ff9b::a00:1]/x",  // NAT64 of 10.0.0.1
        "https://[2002:a00:1::1]/x",  // 6to4 of 10.0.0.1
        "https://[2001::1]/x",  // Teredo
        "https://[2001:db8::1]/x",  // documentation
        "https://2130706433/x",  // decimal 127.0.0.1
        "https://0177.0.0.1/x", "https://0177.1/x",  // octal
        "https://0x7f.0.0.1/x", "https://0x7f000001/x", "https://0x7F.1/x",  // hex
        "https://127.1/x", "https://127.0.1/x",  // short forms
        "https://8.8.8.08/x", "https://8.8.8.8./x",  // a leading zero; a trailing dot
        "https://1.2.3.4.5/x", "https://256.1.1.1/x",
        "https://localhost/x", "https://LOCALHOST./x", "https://api.localhost/x",
        "https://hooks.example.com.0x7f/x",  // a name that ends in a number is an address to a browser
        "https:///x", "not a url",
    ])
    func refused(url: String) {
        #expect(Self.refusal(url) != nil, "\(url) is refused")
    }

    @Test(arguments: [
        "https://hooks.example.com/receiptverify", "https://api.example.com:8443/hook?x=1", "https://8.8.8.8/x",
        "https://1.1.1.1/x", "https://[2606:4700:4700::1111]/x", "https://cafe.be/x", "https://abc1.de/x",
    ])
    func accepted(url: String) {
        #expect(Self.refusal(url) == nil, "\(url) is accepted")
    }

    @Test func theOperatorMayAllowPlainHTTPAndPrivateAddresses() {
        for url in ["http://127.0.0.1:8080/hook", "http://10.0.0.5/hook", "https://localhost/hook"] {
            #expect(WebhookAddress.refusal(ofURL: url, allowsPrivate: true) == nil)
        }
        #expect(WebhookAddress.refusal(ofURL: "ftp://10.0.0.5/", allowsPrivate: true) != nil)
    }

    @Test func aNameIsCheckedByEveryAddressItResolvesTo() {
        // localhost resolves here, to loopback only: refused at connection time, whatever add time said.
        let checked = WebhookAddress.checkedAddress(ofHost: "localhost")
        #expect(checked.address == nil && checked.refusal == "the host resolves to a non-public address")
        #expect(WebhookAddress.checkedAddress(ofHost: "0x7f.1").refusal != nil)
        #expect(WebhookAddress.checkedAddress(ofHost: "[::1]").address == nil)
        #expect(WebhookAddress.checkedAddress(ofHost: "8.8.8.8").address == "8.8.8.8")
        #expect(WebhookAddress.checkedAddress(ofHost: "no-such-host.invalid").refusal == "the host does not resolve")
    }
}
