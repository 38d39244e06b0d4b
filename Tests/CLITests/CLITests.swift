import Foundation
import TestSupport
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `receiptverify` executable end to end, against SQLite and PostgreSQL.
@Suite struct CLITests {
    struct AccountJSON: Decodable {
        let id: String
        let email: String
        let plan: String
        let enabled: Bool
    }

    struct KeyJSON: Decodable {
        let id: String
        let prefix: String
        let key: String?
        let revokedAt: String?

        enum CodingKeys: String, CodingKey {
            case id, prefix, key
            case revokedAt = "revoked_at"
        }
    }

    struct AppJSON: Decodable {
        let token: String
        let bundleIds: [String]
        let allowedEnvironments: [String]
        let verificationMode: String
        let resultCipher: String
        let hasSharedSecret: Bool
        let enabled: Bool
        let resultKey: String?

        enum CodingKeys: String, CodingKey {
            case token, enabled
            case bundleIds = "bundle_ids"
            case allowedEnvironments = "allowed_environments"
            case verificationMode = "verification_mode"
            case resultCipher = "result_cipher"
            case hasSharedSecret = "has_shared_secret"
            case resultKey = "result_key"
        }
    }

    struct PlanJSON: Decodable {
        let name: String
        let monthlyQuota: Int?
        let limits: [String: Int]

        enum CodingKeys: String, CodingKey {
            case name, limits
            case monthlyQuota = "monthly_quota"
        }
    }

    @Test(arguments: StoreKind.available)
    func accountKeyAndAppLeaveNoSecretInClear(kind: StoreKind) async throws {
        try await withCLI(kind) { cli in
            let account = try cli("account", "create", "--name", "Acme", "--email", "ops@acme.io", "--json")
            #expect(account.status == 0, "\(account.stderr)")
            #expect(try account.json(AccountJSON.self).plan == "free")

            let key = try cli("key", "create", "--account", "ops@acme.io", "--label", "backend", "--json")
            let apiKey = try #require(try key.json(KeyJSON.self).key)
            #expect(apiKey.hasPrefix("rvk_") && apiKey.count == 52)

            let added = try cli(
                "app", "add", "--account", "ops@acme.io", "--bundle-id", "com.acme.one", "--bundle-id",
                "com.acme.two", "--shared-secret", "0123456789abcdef0123456789abcdef", "--json")
            #expect(added.status == 0, "\(added.stderr)")
            let app = try added.json(AppJSON.self)
            #expect(app.bundleIds == ["com.acme.one", "com.acme.two"])
            #expect(app.resultKey == nil)
            #expect(app.hasSharedSecret)

            let revealed = try cli("app", "show", app.token, "--reveal-key", "--json").json(AppJSON.self)
            let resultKeyText = try #require(revealed.resultKey)
            let resultKey = try #require(Data(base64Encoded: resultKeyText))
            #expect(resultKey.count == 32)
            #expect(try cli("app", "show", app.token, "--json").json(AppJSON.self).resultKey == nil)

            let dump = try cli.databaseBytes(kind: kind)
            #expect(dump.count > 1000)
            let forbidden: [(String, [UInt8])] = [
                ("API key", Array(apiKey.utf8)), ("API key secret part", Array(apiKey.dropFirst(12).utf8)),
                ("result key", Array(resultKey)), ("result key base64", Array(resultKeyText.utf8)),
                ("result key hex", Array(hex(resultKey).utf8)),
                ("shared secret", Array("0123456789abcdef0123456789abcdef".utf8)),
            ]
            for (what, needle) in forbidden {
                #expect(!dump.contains(needle), "the database holds the \(what) in clear")
            }
            // Sanity check of the search itself: the public token is stored in clear.
            #expect(dump.contains(Array(app.token.utf8)))
            if kind == .sqlite {
                let mode =
                    try FileManager.default.attributesOfItem(atPath: cli.database)[.posixPermissions] as? NSNumber
                #expect(mode?.intValue == 0o600)
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func badInputFailsOnOneLineAndWritesNothing(kind: StoreKind) async throws {
        try await withCLI(kind) { cli in
            try #require(try cli("account", "create", "--name", "A", "--email", "a@example.com").status == 0)
            let failures: [([String], String)] = [
                (["account", "create", "--name", "B", "--email", "A@Example.com"], "already exists"),
                (
                    ["account", "create", "--name", "B", "--email", "b@example.com", "--plan", "gold"],
                    "unknown plan 'gold'"
                ),
                (["account", "create", "--name", "B", "--email", "not-an-email"], "malformed email"),
                (
                    ["app", "add", "--account", "a@example.com", "--bundle-id", "com.ok.app", "--bundle-id", "bad id"],
                    "malformed bundle ID 'bad id'"
                ),
                (
                    ["app", "add", "--account", "a@example.com", "--bundle-id", "com.ok.app", "--mode", "psychic"],
                    "unknown verification mode"
                ),
                (["app", "add", "--account", "nobody@example.com", "--bundle-id", "com.ok.app"], "unknown account"),
                (["app", "show", "app_0000"], "unknown app 'app_0000'"),
                (["app", "remove", "app_0000"], "unknown app"),
                (["app", "update", "app_0000", "--name", "x"], "unknown app"),
                (["key", "revoke", "--account", "a@example.com", "rvk_00000000"], "no API key"),
                (["account", "set-plan", "a@example.com", "gold"], "unknown plan"),
                (["plan", "set", "gold", "--quota", "10"], "needs --quota and --rate-limit"),
                (["plan", "set", "free", "--quota", "lots"], "quota must be a whole number"),
                (["account", "create", "--name", "B"], "Missing expected argument '--email <email>'"),
                (["app", "update", "app_0000", "--rate", "x"], "Unknown option '--rate'"),
            ]
            for (arguments, message) in failures {
                let outcome = try cli.run(arguments)
                #expect(outcome.status != 0, "\(arguments) succeeded")
                #expect(outcome.stdout.isEmpty, "\(arguments) printed \(outcome.stdout)")
                let lines = outcome.stderr.split(separator: "\n")
                #expect(lines.count == 1 && lines[0].hasPrefix("error: "), "\(arguments): \(outcome.stderr)")
                #expect(outcome.stderr.contains(message), "\(arguments): \(outcome.stderr)")
            }
            let accounts = try cli("account", "list", "--json").json([AccountJSON].self)
            #expect(accounts.map(\.email) == ["a@example.com"])
            #expect(accounts[0].plan == "free")
            #expect(try cli("app", "list", "--json").json([AppJSON].self).isEmpty)
            #expect(
                try cli("plan", "list", "--json").json([PlanJSON].self).map(\.name) == ["enterprise", "free", "pro"])
        }
    }

    @Test(arguments: StoreKind.available)
    func operatorsManageAccountsKeysAppsAndPlans(kind: StoreKind) async throws {
        try await withCLI(kind) { cli in
            try #require(try cli("account", "create", "--name", "A", "--email", "a@example.com").status == 0)
            #expect(
                try cli("account", "set-plan", "a@example.com", "pro", "--json").json(AccountJSON.self).plan == "pro")
            #expect(try cli("account", "disable", "a@example.com", "--json").json(AccountJSON.self).enabled == false)
            #expect(try cli("account", "enable", "a@example.com", "--json").json(AccountJSON.self).enabled)
            #expect(try cli("account", "show", "a@example.com", "--json").json(AccountJSON.self).plan == "pro")

            let key = try cli("key", "create", "--account", "a@example.com", "--json").json(KeyJSON.self)
            let listed = try cli("key", "list", "--account", "a@example.com", "--json").json([KeyJSON].self)
            #expect(listed.map(\.prefix) == [key.prefix])
            #expect(listed[0].key == nil)
            let revoked = try cli("key", "revoke", "--account", "a@example.com", key.prefix, "--json").json(
                KeyJSON.self)
            #expect(revoked.revokedAt != nil)

            let app = try cli(
                "app", "add", "--account", "a@example.com", "--bundle-id", "com.example.app", "--json"
            ).json(AppJSON.self)
            let firstKey = try cli("app", "show", app.token, "--reveal-key", "--json").json(AppJSON.self).resultKey
            let updated = try cli(
                "app", "update", app.token, "--environment", "production", "--mode", "local-then-apple", "--cipher",
                "aes-256-gcm", "--bundle-id", "com.example.app", "--bundle-id", "com.example.app.widget", "--disable",
                "--json"
            ).json(AppJSON.self)
            #expect(updated.allowedEnvironments == ["production"])
            #expect(updated.verificationMode == "local-then-apple")
            #expect(updated.resultCipher == "aes-256-gcm")
            #expect(updated.bundleIds == ["com.example.app", "com.example.app.widget"])
            #expect(!updated.enabled)

            let rotated = try cli("app", "rotate-token", app.token, "--json").json(AppJSON.self)
            #expect(rotated.token != app.token)
            #expect(try cli("app", "show", app.token).status != 0)
            try #require(try cli("app", "rotate-key", rotated.token).status == 0)
            let secondKey = try cli("app", "show", rotated.token, "--reveal-key", "--json").json(AppJSON.self).resultKey
            #expect(secondKey != nil && secondKey != firstKey)
            #expect(try cli("app", "list", "--account", "a@example.com", "--json").json([AppJSON].self).count == 1)
            try #require(try cli("app", "remove", rotated.token).status == 0)
            #expect(try cli("app", "list", "--json").json([AppJSON].self).isEmpty)

            let gold = try cli("plan", "set", "gold", "--quota", "unlimited", "--rate-limit", "20", "--json")
            #expect(try gold.json(PlanJSON.self).monthlyQuota == nil)
            #expect(
                try cli("plan", "set", "free", "--quota", "2500", "--json").json(PlanJSON.self).monthlyQuota == 2500)
            #expect(try cli("plan", "list", "--json").json([PlanJSON].self).count == 4)
            // A new plan has the standard limits; each is set by its flag, and one out of range is refused.
            #expect(
                try gold.json(PlanJSON.self).limits == [
                    "apps": 25, "api_keys": 25, "bundle_ids": 25, "products": 2_000, "webhook_endpoints": 10,
                ])
            let limited = try cli(
                "plan", "set", "gold", "--max-apps", "1", "--max-keys", "2", "--max-bundle-ids", "3", "--max-products",
                "4", "--max-webhook-endpoints", "5", "--json")
            #expect(
                try limited.json(PlanJSON.self).limits == [
                    "apps": 1, "api_keys": 2, "bundle_ids": 3, "products": 4, "webhook_endpoints": 5,
                ])
            let refused = try cli("plan", "set", "gold", "--max-products", "10001")
            #expect(refused.status != 0 && refused.stderr.contains("products must be from 0 to 10000"))
            #expect(try cli("plan", "list").stdout.contains("WEBHOOKS/APP"))

            let text = try cli("app", "list")
            #expect(text.status == 0 && text.stdout.hasPrefix("TOKEN"))
        }
    }

    @Test(arguments: StoreKind.available)
    func aDatabaseRefusesAnotherMasterKey(kind: StoreKind) async throws {
        try await withCLI(kind) { cli in
            try #require(try cli("account", "create", "--name", "A", "--email", "a@example.com").status == 0)
            var other = cli
            other.extraEnvironment["RECEIPTVERIFY_MASTER_KEY"] = Data(repeating: 7, count: 32).base64EncodedString()
            let refused = try other("account", "list")
            #expect(refused.status != 0)
            #expect(refused.stderr.contains("master key does not match this database"))
            var malformed = cli
            malformed.extraEnvironment["RECEIPTVERIFY_MASTER_KEY"] = "short"
            #expect(try malformed("account", "list").stderr.contains("master key"))
            #expect(try cli("account", "list").status == 0)
        }
    }

    @Test(arguments: StoreKind.available)
    func theOperatorsChangesSignInLinksAndSignOutsAreAudited(kind: StoreKind) async throws {
        struct AuditJSON: Decodable {
            let actor: String
            let action: String
            let detail: String
        }
        struct LinkJSON: Decodable {
            let url: String
        }
        try await withCLI(kind) { cli in
            #expect(try cli("account", "create", "--name", "Acme", "--email", "ops@acme.io").status == 0)
            #expect(try cli("key", "create", "--account", "ops@acme.io").status == 0)
            let added = try cli(
                "app", "add", "--account", "ops@acme.io", "--bundle-id", "com.acme.one", "--shared-secret",
                "0123456789abcdef0123456789abcdef", "--json")
            let token = try added.json(AppJSON.self).token
            #expect(
                try cli("app", "update", token, "--mode", "apple", "--shared-secret", "abcdefgh12345678").status == 0)
            let link = try cli(
                "account", "login-link", "ops@acme.io", "--public-url", "https://rv.example/", "--json"
            ).json(LinkJSON.self)
            #expect(link.url.hasPrefix("https://rv.example/auth/link?token="))
            #expect(link.url.count == "https://rv.example/auth/link?token=".count + 64)
            let signOut = try cli("account", "sign-out", "ops@acme.io")
            #expect(signOut.stdout.contains("ended 0 sessions"))

            let audit = try cli("audit", "--account", "ops@acme.io", "--json").json([AuditJSON].self)
            #expect(
                Set(audit.map(\.action)) == [
                    "account.create", "key.create", "app.create", "app.update", "link.create", "session.end_all",
                ])
            #expect(audit.allSatisfy { $0.actor == "operator" })
            let update = try #require(audit.first { $0.action == "app.update" })
            #expect(update.detail.contains("mode") && update.detail.contains("shared_secret"))
            #expect(!audit.contains { $0.detail.contains("abcdefgh12345678") })
            #expect(try cli("audit", "--limit", "0").status != 0)
            let list = try cli("account", "list")
            #expect(list.stdout.contains("SIGNED UP") && list.stdout.contains("operator"))
        }
    }

    @Test func serveRefusesBadSettings() async throws {
        try await withCLI(.sqlite) { cli in
            let cases: [([String], String)] = [
                (
                    ["--trust-anchors", "/nonexistent/anchors"],
                    "cannot read the trust anchor directory /nonexistent/anchors"
                ),
                (["--replace-built-in-roots"], "replacing the built-in Apple roots needs a trust anchor directory"),
                (["--max-body-size", "12"], "--max-body-size must be a whole number"),
                (["--apple-production-url", "ftp://example.com"], "--apple-production-url must be an http(s) URL"),
                (["--apple-attempts", "x"], "--apple-attempts must be a whole number"),
                (["--port", "70000"], "--port must be a whole number"),
                (["--idle-timeout", "3601"], "--idle-timeout must be a whole number in 0...3600"),
                (["--usage-flush-interval-ms", "5"], "--usage-flush-interval-ms must be a whole number in 10...60000"),
                (["--auth-cache-ttl", "1h"], "--auth-cache-ttl must be a whole number"),
            ]
            for (arguments, message) in cases {
                let outcome = try cli.run(["serve"] + arguments)
                #expect(outcome.status == 1, "\(arguments)")
                #expect(outcome.stderr.contains("error: \(message)"), "\(outcome.stderr)")
            }
        }
    }

    @Test(arguments: StoreKind.available)
    func serveAnswersHealthAndStopsGracefully(kind: StoreKind) async throws {
        try await withCLI(kind) { cli in
            // Port 0: the system picks a free port (a random one was once taken, and the server could not start).
            let logURL = cli.directory.appendingPathComponent("serve.log")
            FileManager.default.createFile(atPath: logURL.path, contents: nil)
            let server = try cli.start(["serve", "--port", "0"], output: try FileHandle(forWritingTo: logURL))
            defer { if server.isRunning { server.terminate() } }
            let port = try await CLI.listeningPort(in: logURL, of: server)

            let (status, body) = try await get("http://127.0.0.1:\(port)/healthz")
            #expect(status == 200)
            #expect(body == #"{"status":"ok"}"#)
            #expect(try await get("http://127.0.0.1:\(port)/readyz").0 == 200)
            // Migrations ran at start: the CLI sees the seeded plans.
            #expect(try cli("plan", "list", "--json").json([PlanJSON].self).count == 3)

            server.terminate()  // SIGTERM
            server.waitUntilExit()
            #expect(server.terminationReason == .exit)
            #expect(server.terminationStatus == 0)
        }
    }

    private func get(_ url: String) async throws -> (Int, String) {
        let (data, response) = try await URLSession.shared.data(from: URL(string: url)!)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    private func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }
}

extension Array where Element == UInt8 {
    func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, count >= needle.count else { return false }
        return (0...(count - needle.count)).contains { start in
            self[start] == needle[0] && Array(self[start..<(start + needle.count)]) == needle
        }
    }
}

extension CLI {
    /// Every byte the database holds: the SQLite files, or a plain-text `pg_dump`.
    func databaseBytes(kind: StoreKind) throws -> [UInt8] {
        switch kind {
        case .sqlite:
            return try ["", "-wal", "-shm"].flatMap { suffix -> [UInt8] in
                let path = database + suffix
                guard FileManager.default.fileExists(atPath: path) else { return [] }
                return Array(try Data(contentsOf: URL(fileURLWithPath: path)))
            }
        case .postgres:
            let bin = ProcessInfo.processInfo.environment["RECEIPTVERIFY_TEST_PG_BIN"] ?? "/usr/lib/postgresql/15/bin"
            let process = Process()
            process.executableURL = URL(fileURLWithPath: bin + "/pg_dump")
            let components = URLComponents(string: database)!
            process.arguments = [
                "--host", components.host!, "--port", "\(components.port!)", "--username", components.user!,
                "--data-only", String(components.path.dropFirst()),
            ]
            let pipe = Pipe()
            process.standardOutput = pipe
            try launch(process)
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            try #require(process.terminationStatus == 0)
            return Array(data)
        }
    }
}
