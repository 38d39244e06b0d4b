import Testing

@testable import ReceiptServer

/// Which form posts the account screen takes as its own (`Origin`, login CSRF).
struct OriginRuleTests {
    @Test func withAPublicURLOnlyItsOriginIsOurs() {
        func ours(_ origin: String?, authority: String?) -> Bool {
            WebSite.isSameOrigin(
                origin, publicURL: "https://rv.example", publicURLIsSet: true, authority: authority)
        }
        #expect(ours("https://rv.example", authority: "internal:8080"))
        #expect(ours("https://RV.example:443", authority: nil))
        #expect(ours(nil, authority: "rv.example"))  // no Origin: the CSRF token alone decides
        // The request's own host is not believed once the operator named the public URL: a proxy passes any Host.
        #expect(!ours("http://internal:8080", authority: "internal:8080"))
        #expect(!ours("https://evil.example", authority: "evil.example"))
        #expect(!ours("http://rv.example", authority: nil))  // another scheme is another origin
        #expect(!ours("null", authority: "rv.example"))
    }

    @Test func withoutOneTheHostTheRequestNamesIsOursToo() {
        func ours(_ origin: String?, authority: String?) -> Bool {
            WebSite.isSameOrigin(
                origin, publicURL: "http://localhost:8080", publicURLIsSet: false, authority: authority)
        }
        #expect(ours("http://localhost:8080", authority: nil))
        #expect(ours("http://devbox:8080", authority: "devbox:8080"))
        #expect(!ours("http://evil.devbox:8080", authority: "devbox:8080"))
        #expect(!ours("http://devbox:8080", authority: "other:8080"))
        #expect(!ours("https://evil.example", authority: nil))
    }
}
