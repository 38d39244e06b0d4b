import Foundation
import NIOHTTP1
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// `/api` end to end over a real socket: the `serve` binary, tenants made with the CLI, both stores.
@Suite(.serialized) struct VerificationAPITests {
    @Test("a valid receipt, in both body encodings, with bearer auth and a nonce", arguments: StoreKind.available)
    func validReceipt(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            let receipt = try service.receipt(count: 10)

            let form = try await service.post(
                form: [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt), ("nonce", "n-1")])
            #expect(form.httpStatus == 200)
            let answer = try form.json()
            #expect(answer["status"] == .integer(0))
            #expect(answer["description"] == .string("Receipt valid"))
            #expect(answer["environment"] == .string("Xcode"))
            #expect(answer["receipt"]?["bundle_id"] == .string("com.example.app"))
            #expect(answer["receipt"]?["in_app"]?.arrayValue?.count == 10)
            // Even-numbered sample purchases are subscriptions: five of them, oldest purchase first.
            let latest = try #require(answer["latest_receipt_info"]?.arrayValue)
            #expect(latest.count == 5)
            let purchaseDates = latest.compactMap { $0["purchase_date_ms"]?.stringValue.flatMap { Int64($0) } }
            #expect(purchaseDates == purchaseDates.sorted())
            #expect(answer["latest_receipt"] == nil)
            #expect(answer["nonce"] == .string("n-1"))
            #expect(answer["repairs"] == nil)
            let requestID = try #require(answer["request_id"]?.stringValue)
            #expect(form.header("X-Request-ID") == requestID)
            #expect(form.header("Content-Type") == "application/json")

            var json = JSONObject()
            json["token"] = .string(tenant.token)
            json["receipt"] = .string(receipt)
            json["exclude_old_transactions"] = .bool(true)
            let viaJSON = try await service.post(json: json, headers: [("Authorization", "Bearer \(tenant.apiKey)")])
            let jsonAnswer = try viaJSON.json()
            #expect(jsonAnswer["status"] == .integer(0))
            #expect(jsonAnswer["receipt"] == answer["receipt"])
            // exclude_old_transactions: one subscription (one original transaction), so only its newest renewal.
            #expect(jsonAnswer["latest_receipt_info"]?.arrayValue == [latest.last!])
            #expect(jsonAnswer["request_id"] != answer["request_id"])
        }
    }

    @Test("a test root signs only for the apps the operator bound it to (D12)", arguments: StoreKind.available)
    func testRootsAreBoundPerApp(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            // The service trusts two test roots: the receipts' and the JWS PKI's. One tenant is bound to both,
            // another, which also allows test data, only to the JWS PKI's root.
            let bound = try service.tenant(appArguments: ["--allow-test-data"])
            let jwsRoot = try #require(try TrustAnchors(encoded: [service.jwsPKI.rootDER]).anchors.first?.fingerprint)
            let other = try service.tenant(appArguments: ["--allow-test-data", "--test-anchor", jwsRoot])
            let receipt = try service.receipt(count: 2)
            func status(_ tenant: LiveService.Tenant) async throws -> JSONValue? {
                try await service.post(form: [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", receipt)])
                    .json()["status"]
            }
            #expect(try await status(bound) == .integer(0))
            #expect(try await status(other) == .integer(403))
            let shown = try service.cli.expectSuccess(["app", "show", other.token, "--json"]).jsonObject()
            #expect(shown["test_anchors"] == .array([.string(jwsRoot)]))

            // Unbinding every root refuses test data even with the switch on; binding the root's file accepts it.
            try service.cli.expectSuccess(["app", "update", bound.token, "--no-test-anchors"])
            #expect(try await status(bound) == .integer(403))
            let rootFile = service.cli.directory.appendingPathComponent("receipt-root.der")
            try Data(service.pki.rootDER).write(to: rootFile)
            try service.cli.expectSuccess(["app", "update", other.token, "--test-anchor", rootFile.path])
            #expect(try await status(other) == .integer(0))
            // A bad fingerprint is refused by name, and changes nothing.
            let refused = try service.cli.run(["app", "update", other.token, "--test-anchor", "not-a-fingerprint"])
            #expect(refused.status != 0 && refused.stderr.contains("malformed test anchor"))
            #expect(try await status(other) == .integer(0))
        }
    }

    @Test("base64 damaged in transit is repaired and the repairs reported", arguments: StoreKind.available)
    func repairs(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            let receipt = try service.receipt(count: 3)
            let credentials = "apikey=\(tenant.apiKey)&token=\(tenant.token)"

            // `+` not percent-encoded becomes a space in form decoding.
            let raw = try await service.post("/api", body: credentials + "&receipt=" + receipt)
            #expect(try raw.json()["status"] == .integer(0))
            #expect(try raw.json()["repairs"] == .array([.string("spaces_to_plus")]))

            let urlSafe = receipt.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            let wrapped = stride(from: 0, to: urlSafe.count, by: 76).map { start in
                let from = urlSafe.index(urlSafe.startIndex, offsetBy: start)
                return String(
                    urlSafe[from..<(urlSafe.index(from, offsetBy: 76, limitedBy: urlSafe.endIndex) ?? urlSafe.endIndex)]
                )
            }.joined(separator: "\n")
            let repaired = try await service.post(
                form: [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", wrapped)])
            let answer = try repaired.json()
            #expect(answer["status"] == .integer(0))
            let repairs = try #require(answer["repairs"]?.arrayValue).compactMap(\.stringValue)
            #expect(Set(repairs).isSuperset(of: ["removed_line_breaks", "url_safe_alphabet"]))

            let double = try await service.post(
                form: [
                    ("apikey", tenant.apiKey), ("token", tenant.token),
                    ("receipt", Data(receipt.utf8).base64EncodedString()),
                ])
            #expect(try double.json()["repairs"]?.arrayValue?.contains(.string("double_base64")) == true)
        }
    }

    @Test("every authentication failure is the same 401", arguments: StoreKind.available)
    func authentication(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            let other = try service.tenant(appArguments: ["--allow-test-data"])
            let receipt = try service.receipt(count: 1)
            let revoked = try service.cli.expectSuccess(["key", "create", "--account", tenant.email, "--json"])
                .jsonObject()
            let revokedKey = try #require(revoked["key"]?.stringValue)
            try service.cli.expectSuccess([
                "key", "revoke", "--account", tenant.email, try #require(revoked["id"]?.stringValue),
            ])

            func answer(_ fields: [(String, String)], headers: [(String, String)] = []) async throws
                -> LiveService.Answer
            {
                try await service.post(form: fields + [("receipt", receipt)], headers: headers)
            }
            let wrongKey = "rvk_" + String(repeating: "0", count: 48)
            var failures: [(String, LiveService.Answer)] = [
                ("no key", try await answer([("token", tenant.token)])),
                ("no token", try await answer([("apikey", tenant.apiKey)])),
                ("unknown key", try await answer([("apikey", wrongKey), ("token", tenant.token)])),
                ("malformed key", try await answer([("apikey", "hello"), ("token", tenant.token)])),
                (
                    "unknown token",
                    try await answer([("apikey", tenant.apiKey), ("token", "app_" + String(repeating: "f", count: 32))])
                ),
                ("another account's token", try await answer([("apikey", tenant.apiKey), ("token", other.token)])),
                ("revoked key", try await answer([("apikey", revokedKey), ("token", tenant.token)])),
                (
                    "bearer and field differ",
                    try await answer(
                        [("apikey", tenant.apiKey), ("token", tenant.token)],
                        headers: [("Authorization", "Bearer \(other.apiKey)")])
                ),
                // A client that swaps the fields, or mangles them, must not get its key logged as a token.
                ("swapped fields", try await answer([("apikey", tenant.token), ("token", tenant.apiKey)])),
                ("key as token, twice", try await answer([("apikey", tenant.apiKey), ("token", tenant.apiKey)])),
                ("key with a suffix as token", try await answer([("apikey", "x"), ("token", tenant.apiKey + "==")])),
            ]
            try service.cli.expectSuccess(["app", "update", other.token, "--disable"])
            failures.append(("disabled app", try await answer([("apikey", other.apiKey), ("token", other.token)])))
            try service.cli.expectSuccess(["account", "disable", tenant.email])
            failures.append(
                ("disabled account", try await answer([("apikey", tenant.apiKey), ("token", tenant.token)])))

            for (name, failure) in failures {
                #expect(failure.httpStatus == 401, "\(name)")
                var body = try failure.json()
                #expect(body["request_id"]?.stringValue?.isEmpty == false, "\(name)")
                body["request_id"] = nil
                #expect(
                    JSONValue.object(body).encodedString
                        == #"{"status":401,"description":"The API key or app token is not valid"}"#, "\(name)")
            }
            // No part of a key reaches the log, whatever field it was sent in.
            for key in [tenant.apiKey, other.apiKey, revokedKey] {
                let secret = String(key.dropFirst(4))
                for start in stride(from: 0, to: secret.count - 12, by: 6) {
                    let piece = String(secret.dropFirst(start).prefix(12))
                    #expect(!service.logText.contains(piece), "a 12-character piece of a key is in the log")
                }
            }
            // Re-enabled, the same credentials work again: the refusals were not cached.
            try service.cli.expectSuccess(["account", "enable", tenant.email])
            #expect(try await answer([("apikey", tenant.apiKey), ("token", tenant.token)]).httpStatus == 200)
            // No key, secret or receipt reaches the log.
            let log = service.logText
            for secret in [tenant.apiKey, other.apiKey, revokedKey, String(receipt.prefix(60))] {
                #expect(!log.contains(secret))
            }
            #expect(log.contains("reason=unknown or revoked API key"))
        }
    }

    @Test("403 for each of the app's checks; 21002 and 21003 for bad receipts", arguments: StoreKind.available)
    func checks(kind: StoreKind) async throws {
        try await withLiveService(kind) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            let strict = try service.tenant()
            let credentials = [("apikey", tenant.apiKey), ("token", tenant.token)]
            let receipt = try service.receipt(count: 4)

            func status(_ fields: [(String, String)]) async throws -> (Int, Int64?) {
                let answer = try await service.post(form: fields)
                let body = try answer.json()
                if body["status"] != .integer(0) { #expect(body["receipt"] == nil) }
                guard case .integer(let status)? = body["status"] else { return (answer.httpStatus, nil) }
                return (answer.httpStatus, status)
            }
            // Sample transaction ids are 1000000000 + index; products alternate monthly/coins.
            #expect(
                try await status(credentials + [("receipt", receipt), ("transaction_id", "1000000003")]) == (200, 0))
            #expect(
                try await status(
                    credentials + [
                        ("receipt", receipt), ("transaction_id", "1000000003"),
                        ("product_id", "com.example.app.coins"),
                    ]) == (200, 0))
            #expect(try await status(credentials + [("receipt", receipt), ("transaction_id", "999")]) == (403, 403))
            #expect(
                try await status(credentials + [("receipt", receipt), ("product_id", "com.example.app.gold")]) == (
                    403, 403
                ))
            #expect(
                try await status(
                    credentials + [
                        ("receipt", receipt), ("transaction_id", "1000000003"),
                        ("product_id", "com.example.app.monthly"),
                    ]) == (403, 403))
            #expect(
                try await status(credentials + [("receipt", try service.receipt(count: 1, bundleID: "com.other.app"))])
                    == (403, 403))
            // Test-signed data on an app that does not allow it.
            #expect(
                try await status([("apikey", strict.apiKey), ("token", strict.token), ("receipt", receipt)]) == (
                    403, 403
                ))
            // Unreadable and not authentic.
            #expect(try await status(credentials + [("receipt", "!!not base64!!")]) == (200, 21002))
            #expect(try await status(credentials) == (200, 21002))
            #expect(
                try await status(credentials + [("receipt", try service.receipt(count: 1, tampering: .signature))]) == (
                    200, 21003
                ))
            #expect(
                try await status(credentials + [("receipt", try service.receipt(count: 1, tampering: .content))]) == (
                    200, 21003
                ))

            // A StoreKit 2 JWS verifies locally; its payload comes back under `receipt` with Apple's names.
            var jws = JWSBuilder()
            jws.transactionID = "2000000000000042"
            let signed = try jws.build(signedBy: service.jwsPKI)
            let answer = try await service.post(
                form: credentials + [("receipt", signed), ("transaction_id", "2000000000000042")])
            let body = try answer.json()
            #expect(body["status"] == .integer(0))
            #expect(body["kind"] == .string("signed_transaction"))
            #expect(body["receipt"]?["transactionId"] == .string("2000000000000042"))
            #expect(
                try await status(credentials + [("receipt", signed), ("product_id", "com.example.app.yearly")]) == (
                    403, 403
                ))
            #expect(body["transactions"]?.arrayValue?.count == 1)

            // Authentic but no purchase: status 0, its kind, and nothing to deliver. (A renewal info names no bundle
            // ID, so no app can claim it: 403.)
            for (payload, kind) in [
                (JWSBuilder.Payload.appTransaction, "app_transaction"), (.notification, "notification"),
            ] {
                var item = JWSBuilder()
                item.payload = payload
                let answer = try await service.post(
                    form: credentials + [("receipt", try item.build(signedBy: service.jwsPKI))]
                ).json()
                #expect(answer["status"] == .integer(0))
                #expect(answer["kind"] == .string(kind))
                #expect(answer["transactions"] == .array([]))
            }
        }
    }

    @Test(
        "Apple's receipts: environment checks and local verification of the real thing", arguments: StoreKind.available)
    func appleReceipts(kind: StoreKind) async throws {
        guard let fixtures = SharedFixtures.directory else {
            if SharedFixtures.isCI { Issue.record("fixtures missing under CI") }
            return
        }
        try await withLiveService(kind) { service in
            let receipt = try String(
                contentsOf: fixtures.appendingPathComponent("receipts/revenuecat_sandbox_ios_2020.b64"), encoding: .utf8
            )
            let sandbox = try service.tenant(appArguments: [
                "--bundle-id", "com.revenuecat.sampleapp", "--environment", "sandbox",
            ])
            let production = try service.tenant(appArguments: [
                "--bundle-id", "com.revenuecat.sampleapp", "--environment", "production",
            ])

            let answer = try await service.post(form: [
                ("apikey", sandbox.apiKey), ("token", sandbox.token), ("receipt", receipt),
            ])
            let body = try answer.json()
            #expect(body["status"] == .integer(0))
            #expect(body["environment"] == .string("Sandbox"))
            // Our latest_receipt_info is Apple's, but for the subscription group Apple alone knows.
            let apples = try #require(
                RecordedAnswer.latestReceiptInfoWithoutGroups(try RecordedAnswer.revenueCat(fixtures)))
            #expect(body["latest_receipt_info"]?.arrayValue == apples)

            let refused = try await service.post(form: [
                ("apikey", production.apiKey), ("token", production.token), ("receipt", receipt),
            ])
            #expect(refused.httpStatus == 403)
            #expect(try refused.json()["status"] == .integer(403))
        }
    }

    /// The README's first verification on a machine without network: `serve` with no trust-anchor setting at all
    /// verifies Apple's real unified receipts, iOS 6 receipts and StoreKit 2 JWS locally (Apple is never asked), and
    /// an unsigned JWS is not authentic.
    @Test("Out of the box: Apple's roots are built in", arguments: StoreKind.available)
    func builtInRoots(kind: StoreKind) async throws {
        guard let fixtures = SharedFixtures.directory else {
            if SharedFixtures.isCI { Issue.record("fixtures missing under CI") }
            return
        }
        @Sendable func text(_ path: String) throws -> String {
            try String(contentsOf: fixtures.appendingPathComponent(path), encoding: .utf8)
        }
        try await withLiveService(kind) { service in
            let bare = try await service.startServer(logName: "bare.log", withAnchors: false)
            defer { _ = bare.stop() }
            for (bundleID, path, expectedKind) in [
                ("com.revenuecat.sampleapp", "receipts/revenuecat_sandbox_ios_2020.b64", nil),
                ("com.mindmobapp.MindMob", "receipts/ios6_sandbox_mindmob_2012.b64", nil),
                (
                    "com.audaos.audarecorder", "jws/apple_notification_did_renew_2022__signedTransactionInfo.jws",
                    "signed_transaction"
                ),
                ("com.audaos.audarecorder", "jws/apple_notification_did_renew_2022.jws", "notification"),
            ] as [(String, String, String?)] {
                let tenant = try service.tenant(appArguments: ["--bundle-id", bundleID, "--environment", "sandbox"])
                let answer = try await service.post(
                    to: bare, form: [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", try text(path))])
                let body = try answer.json()
                #expect(answer.httpStatus == 200, "\(path)")
                #expect(body["status"] == .integer(0), "\(path): \(answer.text)")
                #expect(body["environment"] == .string("Sandbox"), "\(path)")
                #expect(body["kind"]?.stringValue == expectedKind, "\(path)")
            }
            #expect(service.apple.received.isEmpty)
            #expect(bare.logText.contains("trust.apple_anchors=4"))

            // A real transaction re-sent as an unsecured JWS (`"alg":"none"`, no signature) is not authentic.
            let tenant = try service.tenant(appArguments: ["--bundle-id", "com.audaos.audarecorder"])
            let signed = try text("jws/apple_notification_did_renew_2022__signedTransactionInfo.jws")
            let payload = signed.split(separator: ".")[1]
            let unsigned = "\(JWSBuilder.base64URL(Array(#"{"alg":"none"}"#.utf8))).\(payload)."
            let refused = try await service.post(
                to: bare, form: [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", unsigned)])
            #expect(refused.httpStatus == 200)
            #expect(try refused.json()["status"] == .integer(21003))
        }
    }

    @Test("HTTP-level errors are JSON: 400, 405, 413, 415, 404", arguments: StoreKind.available)
    func httpErrors(kind: StoreKind) async throws {
        try await withLiveService(kind, serveArguments: ["--max-body-size", "65536"]) { service in
            let tenant = try service.tenant(appArguments: ["--allow-test-data"])
            func check(_ answer: LiveService.Answer, _ status: Int) throws {
                #expect(answer.httpStatus == status)
                let body = try answer.json()
                #expect(body["status"] == .integer(Int64(status)))
                #expect(body["description"]?.stringValue?.isEmpty == false)
                #expect(body["request_id"]?.stringValue?.count == 24)
            }
            let big = String(repeating: "A", count: 70_000)
            try check(
                try await service.post(form: [("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", big)]),
                413)
            // Streamed without a length, the limit still holds.
            try check(
                try await service.postStreamed(
                    chunks: ["apikey=\(tenant.apiKey)&receipt="]
                        + Array(repeating: String(repeating: "B", count: 8_192), count: 10)), 413)
            try check(try await service.post("/api", body: "x", contentType: "text/plain"), 415)
            try check(try await service.post("/api", body: "{\"token\": ", contentType: "application/json"), 400)
            try check(try await service.post("/api", body: "[1]", contentType: "application/json"), 400)
            try check(
                try await service.post("/api", body: "token=%zz", contentType: "application/x-www-form-urlencoded"), 400
            )
            try check(try await service.post("/api", body: "token=a&token=b"), 400)
            let get = try await service.post("/api", body: "", method: .GET)
            try check(get, 405)
            #expect(get.header("Allow") == "POST")
            try check(try await service.post("/nothing", body: ""), 404)
            // The service still answers after all of that.
            let fine = try await service.post(form: [
                ("apikey", tenant.apiKey), ("token", tenant.token), ("receipt", try service.receipt(count: 1)),
            ])
            #expect(fine.httpStatus == 200)
        }
    }
}
