import Foundation
import TestSupport
import Testing

/// `receiptverify verify` (Apple's roots built in, a directory adding to or replacing them) and
/// `deploy/fetch-apple-roots.sh`, run as an operator runs them.
@Suite struct VerifyCommandTests {
    static var fixtures: URL? {
        if let directory = SharedFixtures.directory { return directory }
        if SharedFixtures.isCI { Issue.record("fixtures folder \(SharedFixtures.path) is missing under CI") }
        return nil
    }

    static var repository: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("../..").standardized
    }

    struct Answer: Decodable {
        let status: Int
        let description: String
        let environment: String?
        let kind: String?
        let repairs: [String]?
    }

    /// Runs the fetch script offline (`--from` the fixtures) into a fresh directory, then `body` with a CLI.
    func withRoots(_ body: (CLI, URL, URL) async throws -> Void) async throws {
        guard let fixtures = Self.fixtures else { return }
        try await withTemporaryDirectory { directory in
            let roots = directory.appendingPathComponent("roots")
            let script = Process()
            script.executableURL = URL(fileURLWithPath: "/bin/bash")
            script.arguments = [
                Self.repository.appendingPathComponent("deploy/fetch-apple-roots.sh").path, "--from",
                fixtures.appendingPathComponent("certs").path, roots.path,
            ]
            script.standardOutput = FileHandle.nullDevice
            try launch(script)
            script.waitUntilExit()
            try #require(script.terminationStatus == 0)
            #expect(try FileManager.default.contentsOfDirectory(atPath: roots.path).count == 4)
            try await body(
                CLI(directory: directory, database: directory.appendingPathComponent("x.sqlite").path), roots, fixtures)
        }
    }

    /// Runs `body` with a CLI in a fresh scratch directory that holds no certificate at all.
    func withoutRoots(_ body: (CLI, URL) async throws -> Void) async throws {
        guard let fixtures = Self.fixtures else { return }
        try await withTemporaryDirectory { directory in
            try await body(
                CLI(directory: directory, database: directory.appendingPathComponent("x.sqlite").path), fixtures)
        }
    }

    @Test func realReceiptsAndJWSVerifyWithNoSetUp() async throws {
        try await withoutRoots { cli, fixtures in
            for (file, environment, kind) in [
                ("receipts/revenuecat_sandbox_ios_2020.b64", "Sandbox", nil),
                ("receipts/tp_production_ios_g5_2024.b64", "Production", nil),
                ("receipts/ios6_sandbox_mindmob_2012.b64", "Sandbox", nil),
                ("jws/apple_transaction_voicerec_sub_2022.jws", "Sandbox", "signed_transaction"),
                ("jws/apple_notification_did_renew_2022.jws", "Sandbox", "notification"),
            ] as [(String, String, String?)] {
                let outcome = try cli("verify", fixtures.appendingPathComponent(file).path)
                #expect(outcome.status == 0, "\(file): \(outcome.stderr)")
                let answer = try outcome.json(Answer.self)
                #expect(answer.status == 0 && answer.description == "Receipt valid")
                #expect(answer.environment == environment)
                #expect(answer.kind == kind)
            }
        }
    }

    @Test func refusalsCarryAppleStatusCodes() async throws {
        try await withoutRoots { cli, fixtures in
            let tampered = try cli(
                "verify", fixtures.appendingPathComponent("tampered/receipt_signature_last_byte_flipped.b64").path)
            #expect(tampered.status == 1)
            #expect(try tampered.json(Answer.self).status == 21003)

            // The Xcode root is not built in: refused even with --allow-test-data until a directory adds it.
            let xcode = fixtures.appendingPathComponent("receipts/xcode_applelib_with_transaction_2023.b64").path
            #expect(try cli("verify", "--allow-test-data", xcode).json(Answer.self).status == 21003)
            let testRoots = cli.directory.appendingPathComponent("test-roots")
            try FileManager.default.createDirectory(at: testRoots, withIntermediateDirectories: true)
            try FileManager.default.copyItem(
                at: fixtures.appendingPathComponent("certs/StoreKitTestCertificate.cer"),
                to: testRoots.appendingPathComponent("StoreKitTestCertificate.cer"))
            #expect(try cli("verify", "--trust-anchors", testRoots.path, xcode).json(Answer.self).status == 403)
            let allowed = try cli("verify", "--roots", testRoots.path, "--allow-test-data", xcode)
            #expect(allowed.status == 0)
            #expect(try allowed.json(Answer.self).environment == "Xcode")

            // Apple's roots stay trusted beside the directory, unless it replaces them.
            let revenuecat = fixtures.appendingPathComponent("receipts/revenuecat_sandbox_ios_2020.b64").path
            #expect(try cli("verify", "--roots", testRoots.path, revenuecat).status == 0)
            let replaced = try cli("verify", "--roots", testRoots.path, "--replace-built-in-roots", revenuecat)
            #expect(replaced.status == 1)
            #expect(try replaced.json(Answer.self).status == 21003)
            var fromEnvironment = cli
            fromEnvironment.extraEnvironment = [
                "RECEIPTVERIFY_TRUST_ANCHORS": testRoots.path, "RECEIPTVERIFY_REPLACE_BUILT_IN_ROOTS": "true",
            ]
            #expect(try fromEnvironment("verify", revenuecat).json(Answer.self).status == 21003)
            #expect(try fromEnvironment("verify", "--allow-test-data", xcode).status == 0)
        }
    }

    @Test func replacingTheBuiltInRootsNeedsADirectory() async throws {
        try await withoutRoots { cli, fixtures in
            let revenuecat = fixtures.appendingPathComponent("receipts/revenuecat_sandbox_ios_2020.b64").path
            let bare = try cli("verify", "--replace-built-in-roots", revenuecat)
            #expect(bare.status == 1)
            #expect(bare.stdout.isEmpty)
            #expect(bare.stderr == "error: replacing the built-in Apple roots needs a trust anchor directory\n")
            var wrong = cli
            wrong.extraEnvironment = ["RECEIPTVERIFY_REPLACE_BUILT_IN_ROOTS": "maybe"]
            #expect(
                try wrong("verify", revenuecat).stderr
                    == "error: RECEIPTVERIFY_REPLACE_BUILT_IN_ROOTS must be true or false\n")
        }
    }

    /// What the fetch script writes is still a valid directory: Apple's roots it holds are counted once.
    @Test func aFetchedRootDirectoryStillWorks() async throws {
        try await withRoots { cli, roots, fixtures in
            let outcome = try cli(
                "verify", "--roots", roots.path, "--replace-built-in-roots",
                fixtures.appendingPathComponent("receipts/tp_production_ios_g5_2024.b64").path)
            #expect(outcome.status == 0, "\(outcome.stderr)")
            #expect(
                try cli(
                    "verify", "--roots", roots.path,
                    fixtures.appendingPathComponent("receipts/ios6_sandbox_mindmob_2012.b64").path
                )
                .status == 0)
        }
    }

    @Test func standardInputIsRepairedAndTheRepairsReported() async throws {
        try await withRoots { cli, roots, fixtures in
            let text = try String(
                contentsOf: fixtures.appendingPathComponent("receipts/mbaasy_sandbox_ios_2015_08.b64"), encoding: .utf8)
            let broken = text.trimmingCharacters(in: .whitespacesAndNewlines).replacingOccurrences(of: "+", with: " ")
            let input = cli.directory.appendingPathComponent("broken.txt")
            try broken.write(to: input, atomically: true, encoding: .utf8)
            let outcome = try cli.run(["verify", "--roots", roots.path, input.path])
            #expect(outcome.status == 0, "\(outcome.stderr)")
            #expect(try outcome.json(Answer.self).repairs == ["spaces_to_plus"])
            let piped = try cli.run(["verify", "--roots", roots.path, "-"], input: Data((broken + "\n").utf8))
            #expect(piped.status == 0, "\(piped.stderr)")
            #expect(try piped.json(Answer.self).repairs == ["spaces_to_plus"])
            #expect(
                try cli("verify", "--roots", cli.directory.appendingPathComponent("none").path, input.path).status == 1)
        }
    }

    @Test func theFetchScriptRefusesAWrongFingerprint() async throws {
        guard let fixtures = Self.fixtures else { return }
        try await withTemporaryDirectory { directory in
            let source = directory.appendingPathComponent("source")
            try FileManager.default.copyItem(at: fixtures.appendingPathComponent("certs"), to: source)
            try FileManager.default.removeItem(at: source.appendingPathComponent("AppleRootCA-G2.cer"))
            try FileManager.default.copyItem(
                at: source.appendingPathComponent("StoreKitTestCertificate.cer"),
                to: source.appendingPathComponent("AppleRootCA-G2.cer"))
            let target = directory.appendingPathComponent("roots")
            let script = Process()
            script.executableURL = URL(fileURLWithPath: "/bin/bash")
            script.arguments = [
                Self.repository.appendingPathComponent("deploy/fetch-apple-roots.sh").path, "--from", source.path,
                target.path,
            ]
            let errors = Pipe()
            script.standardOutput = FileHandle.nullDevice
            script.standardError = errors
            try launch(script)
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            script.waitUntilExit()
            #expect(script.terminationStatus != 0)
            #expect(message.contains("REFUSED AppleRootCA-G2.cer"))
            #expect(!FileManager.default.fileExists(atPath: target.path))
        }
    }
}
