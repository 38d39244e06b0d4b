import Foundation
import ReceiptCore
import TestSupport
import Testing

/// `/apiencrypted`: results sealed with the app's key, opened here by independent implementations
/// (the `openssl` command for AES-256-CBC, Python's `cryptography` for AES-256-GCM).
@Suite(.serialized) struct EncryptedAPITests {
    @Test("AES-256-CBC and AES-256-GCM results decrypt to the /api JSON", arguments: StoreKind.available)
    func encryptedResults(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            for cipher in ["aes-256-cbc", "aes-256-gcm"] {
                let tenant = try service.tenant(appArguments: ["--allow-test-data", "--cipher", cipher])
                let receipt = try service.receipt(count: 10)
                let fields = [
                    ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt),
                    ("nonce", "replay-\(cipher)"),
                ]
                let plain = try await service.post(form: fields)
                let sealed = try await service.post("/apiencrypted", form: fields)
                #expect(sealed.httpStatus == 200)
                #expect(sealed.header("Content-Type")?.hasPrefix("text/plain") == true)
                let bytes = try #require(Data(base64Encoded: sealed.text))
                let opened =
                    try cipher == "aes-256-cbc"
                    ? Self.opensslDecryptCBC(Array(bytes), key: tenant.resultKey)
                    : Self.pythonDecryptGCM(Array(bytes), key: tenant.resultKey)
                var decrypted = try #require(try JSONParser.parse(opened).objectValue)
                var expected = try plain.json()
                #expect(decrypted["nonce"] == .string("replay-\(cipher)"))
                #expect(decrypted["request_id"]?.stringValue == sealed.header("X-Request-ID"))
                decrypted["request_id"] = nil
                expected["request_id"] = nil
                // The ledger's decisions are inside the ciphertext: the plain call recorded the ten transactions,
                // the sealed one sees them again.
                let states = { (answer: JSONObject) in
                    (answer["transactions"]?.arrayValue ?? []).map { "\($0["state"]?.stringValue ?? "")" }
                }
                #expect(states(expected) == Array(repeating: "new", count: 10))
                #expect(states(decrypted) == Array(repeating: "seen", count: 10))
                decrypted["transactions"] = nil
                expected["transactions"] = nil
                #expect(decrypted == expected, "\(cipher)")

                // A fresh IV every time: the same answer never encrypts the same way twice.
                let again = try await service.post("/apiencrypted", form: fields)
                #expect(Array(try #require(Data(base64Encoded: again.text)).prefix(16)) != Array(bytes.prefix(16)))

                if cipher == "aes-256-gcm" {
                    var flipped = Array(bytes)
                    flipped[flipped.count / 2] ^= 0x01
                    #expect(throws: SetupError.self) { try Self.pythonDecryptGCM(flipped, key: tenant.resultKey) }
                }

                // Errors stay plain JSON.
                let failed = try await service.post(
                    "/apiencrypted", form: [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", "%%%")])
                #expect(failed.header("Content-Type") == "application/json")
                #expect(try failed.json()["status"] == .integer(21002))
            }
            // A plan without the encrypted endpoint.
            let free = try service.tenant(plan: "free", appArguments: ["--allow-test-data"])
            let refused = try await service.post(
                "/apiencrypted",
                form: [("apikey", free.apiKey), ("token", free.token), ("receipt", try service.receipt(count: 1))])
            #expect(refused.httpStatus == 402)
            #expect(try refused.json()["status"] == .integer(402))
        }
    }

    static func opensslDecryptCBC(_ sealed: [UInt8], key: [UInt8]) throws -> [UInt8] {
        try run(
            ["openssl", "enc", "-d", "-aes-256-cbc", "-K", hex(key), "-iv", hex(Array(sealed.prefix(16)))],
            input: Array(sealed.dropFirst(16)))
    }

    static func pythonDecryptGCM(_ sealed: [UInt8], key: [UInt8]) throws -> [UInt8] {
        let script = """
            import sys
            from cryptography.hazmat.primitives.ciphers.aead import AESGCM
            data = sys.stdin.buffer.read()
            sys.stdout.buffer.write(AESGCM(bytes.fromhex(sys.argv[1])).decrypt(data[:16], data[16:], None))
            """
        return try run(["python3", "-c", script, hex(key)], input: sealed)
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    /// Runs a command with `input` on standard input; throws when it fails.
    static func run(_ arguments: [String], input: [UInt8]) throws -> [UInt8] {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        let stdin = Pipe()
        let stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        try launch(process)
        stdin.fileHandleForWriting.write(Data(input))
        try stdin.fileHandleForWriting.close()
        let output = stdout.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw SetupError("\(arguments[0]) failed") }
        return Array(output)
    }
}

extension JSONValue {
    var objectValue: JSONObject? {
        guard case .object(let object) = self else { return nil }
        return object
    }
}
