import ReceiptCore
import Testing

@Suite struct BundleIDTests {
    @Test(arguments: ["com.example.app", "com.Example.My-App2", "io.a.b.c.d", "a.b"])
    func validBundleIDs(text: String) throws {
        #expect(try #require(BundleID(text)).value == text)
    }

    @Test(arguments: [
        "", "com", "com.", ".com", "com..example", "com.example app", "com.example_app", "com.exämple.app",
        "com.example.*", String(repeating: "a.", count: 80) + "a",
    ])
    func malformedBundleIDs(text: String) {
        #expect(BundleID(text) == nil)
    }

    @Test func environmentsParseFromConfigurationNames() {
        #expect(StoreEnvironment(configurationName: "Production") == .production)
        #expect(StoreEnvironment(configurationName: "sandbox") == .sandbox)
        #expect(StoreEnvironment(configurationName: "staging") == nil)
        #expect(StoreEnvironment.sandbox.rawValue == "Sandbox")
    }
}
