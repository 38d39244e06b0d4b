import Foundation
import ReceiptService
import Testing

@Suite struct SecretsTests {
    @Test func sealedSecretsOpenOnlyInTheirContextWithTheirKey() throws {
        let key = MasterKey.generate()
        let sealed = try SealedSecret.seal(Array("s3cret".utf8), context: "app:1:shared_secret", with: key)
        #expect(sealed.bytes.count == 1 + 12 + 6 + 16)
        #expect(!sealed.bytes.windows(ofCount: 6).contains(Array("s3cret".utf8)))
        #expect(try sealed.open(context: "app:1:shared_secret", with: key) == Array("s3cret".utf8))
        #expect(throws: ServiceError(.corruptSecret)) { try sealed.open(context: "app:2:shared_secret", with: key) }
        #expect(throws: ServiceError(.corruptSecret)) {
            try sealed.open(context: "app:1:shared_secret", with: MasterKey.generate())
        }
        var flipped = sealed.bytes
        flipped[20] ^= 1
        #expect(throws: ServiceError(.corruptSecret)) {
            try SealedSecret(bytes: flipped).open(context: "app:1:shared_secret", with: key)
        }
        #expect(throws: ServiceError(.corruptSecret)) { try SealedSecret(bytes: [1, 2]).open(context: "x", with: key) }
    }

    @Test func sealingTwiceGivesDifferentBytes() throws {
        let key = MasterKey.generate()
        let first = try SealedSecret.seal([1, 2, 3], context: "c", with: key)
        let second = try SealedSecret.seal([1, 2, 3], context: "c", with: key)
        #expect(first != second)
    }

    @Test func masterKeysParseOnlyFrom32Bytes() throws {
        let key = MasterKey.generate()
        #expect(try MasterKey(base64: " \(key.base64)\n").checkValue == key.checkValue)
        #expect(key.checkValue != MasterKey.generate().checkValue)
        #expect(throws: ServiceError(.invalidMasterKey)) { try MasterKey(base64: "not base64!") }
        #expect(throws: ServiceError(.invalidMasterKey)) {
            try MasterKey(base64: Data(count: 16).base64EncodedString())
        }
    }

    @Test func theKeyFileIsCreatedOncePrivateAndReadBack() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rv-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("master.key").path

        let (created, wasCreated) = try MasterKeySource.file(path: path).load()
        #expect(wasCreated)
        let permissions = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber
        #expect(permissions?.intValue == 0o600)
        let (read, wasCreatedAgain) = try MasterKeySource.file(path: path).load()
        #expect(!wasCreatedAgain)
        #expect(read.checkValue == created.checkValue)

        try "garbage".write(toFile: path, atomically: true, encoding: .utf8)
        #expect(throws: ServiceError(.invalidMasterKey)) { try MasterKeySource.file(path: path).load() }
        #expect(throws: ServiceError(.invalidMasterKey)) {
            try MasterKeySource.file(path: directory.appendingPathComponent("missing/dir/key").path).load()
        }
    }

    @Test func aDerivedKeySealsApartFromTheMasterKey() throws {
        let master = MasterKey.generate()
        let cookies = master.derived(for: "web cookies")
        let sealed = try SealedSecret.seal(Array("session".utf8), context: "web:test", with: cookies)
        #expect(try sealed.open(context: "web:test", with: cookies) == Array("session".utf8))
        #expect(throws: ServiceError.self) { try sealed.open(context: "web:test", with: master) }
        #expect(throws: ServiceError.self) { try sealed.open(context: "web:test", with: master.derived(for: "other")) }
        let secret = try SealedSecret.seal(Array("key".utf8), context: "app:x:result_key", with: master)
        #expect(throws: ServiceError.self) { try secret.open(context: "app:x:result_key", with: cookies) }
    }
}

extension Array where Element == UInt8 {
    func windows(ofCount count: Int) -> [[UInt8]] {
        guard self.count >= count else { return [] }
        return (0...(self.count - count)).map { Array(self[$0..<($0 + count)]) }
    }
}
