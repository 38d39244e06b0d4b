import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import ReceiptCore
import ReceiptTestKit
import TestSupport
import Testing

/// The real `receiptverify serve` process on a free loopback port, over a fresh database, with a fake Apple, and an
/// HTTP client to call it: what a customer's backend sees.
struct LiveService: Sendable {
    let cli: CLI
    let baseURL: String
    let apple: FakeApple
    let http: HTTPClient
    /// The receipt test PKI (RSA) and the JWS test PKI (P-256), whose roots are trust anchors of the service.
    let pki: TestPKI
    let jwsPKI: TestPKI
    let log: URL
    /// The `serve` process id, for signals.
    let processID: Int32
    /// The trust anchor directory and the fake Apple's URL the service was started with, for more servers.
    let anchors: URL
    let appleURL: String

    /// Starts another `serve` process over the same database and fake Apple, with the same anchor directory or, when
    /// `withAnchors` is false, none (Apple's built-in roots alone).
    func startServer(
        arguments: [String] = [], logName: String, withAnchors: Bool = true, descriptorLimit: Int? = nil
    ) async throws -> ServeProcess {
        try await ServeProcess.start(
            cli: cli, anchors: withAnchors ? anchors : nil, appleURL: appleURL, arguments: arguments,
            logName: logName, descriptorLimit: descriptorLimit)
    }

    /// POSTs form fields to another server.
    func post(to server: ServeProcess, _ path: String = "/api", form fields: [(String, String)]) async throws -> Answer
    {
        try await post(path, body: Self.form(fields), baseURL: server.baseURL)
    }

    /// One answer.
    struct Answer: Sendable {
        let httpStatus: Int
        let headers: [(String, String)]
        let body: [UInt8]

        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }

        /// The body as a JSON object.
        func json() throws -> JSONObject {
            guard case .object(let object) = try JSONParser.parse(body) else { throw SetupError("not an object") }
            return object
        }

        var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// POSTs `body` with a content type, to this service or the server at `baseURL`; `headers` are added.
    func post(
        _ path: String, body: String, contentType: String = "application/x-www-form-urlencoded",
        headers: [(String, String)] = [], method: HTTPMethod = .POST, baseURL: String? = nil
    ) async throws -> Answer {
        var request = HTTPClientRequest(url: (baseURL ?? self.baseURL) + path)
        request.method = method
        request.headers.add(name: "Content-Type", value: contentType)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if method == .POST { request.body = .bytes(ByteBuffer(string: body)) }
        return try await send(request)
    }

    /// POSTs a form body in chunks, without a Content-Length (chunked transfer encoding).
    func postStreamed(_ path: String = "/api", chunks: [String]) async throws -> Answer {
        var request = HTTPClientRequest(url: baseURL + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
        let (stream, continuation) = AsyncStream.makeStream(of: ByteBuffer.self)
        for chunk in chunks { continuation.yield(ByteBuffer(string: chunk)) }
        continuation.finish()
        request.body = .stream(stream, length: .unknown)
        return try await send(request)
    }

    private func send(_ request: HTTPClientRequest) async throws -> Answer {
        let response = try await http.execute(request, timeout: .seconds(30))
        let bytes = try await response.body.collect(upTo: 16 << 20)
        return Answer(
            httpStatus: Int(response.status.code), headers: response.headers.map { ($0.name, $0.value) },
            body: Array(bytes.readableBytesView))
    }

    /// POSTs form fields, each percent-encoded.
    func post(_ path: String = "/api", form fields: [(String, String)], headers: [(String, String)] = [])
        async throws -> Answer
    {
        try await post(path, body: Self.form(fields), headers: headers)
    }

    /// POSTs a JSON object.
    func post(_ path: String = "/api", json object: JSONObject, headers: [(String, String)] = []) async throws -> Answer
    {
        try await post(
            path, body: JSONValue.object(object).encodedString, contentType: "application/json", headers: headers)
    }

    static func form(_ fields: [(String, String)]) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
            .joined(separator: "&")
    }

    /// A tenant made with the CLI: its API key, app token and result key.
    struct Tenant: Sendable {
        let email: String
        let apiKey: String
        let token: String
        let resultKey: [UInt8]
    }

    /// Creates an account on `plan` with one key and one app (`appArguments` are `app add` flags). An app that allows
    /// test data is bound to the service's test roots unless the arguments bind some.
    func tenant(plan: String = "pro", appArguments: [String] = []) throws -> Tenant {
        let binds = appArguments.contains("--allow-test-data") && !appArguments.contains("--test-anchor")
        let appArguments = appArguments + (binds ? ["--test-anchor", anchors.path] : [])
        let email = "t\(UInt32.random(in: 0...UInt32.max))@example.com"
        try cli.expectSuccess(["account", "create", "--name", "Tenant", "--email", email, "--plan", plan])
        let key = try cli.expectSuccess(["key", "create", "--account", email, "--json"]).jsonObject()
        let app = try cli.expectSuccess(
            ["app", "add", "--account", email, "--json"]
                + (appArguments.contains("--bundle-id") ? [] : ["--bundle-id", "com.example.app"]) + appArguments
        ).jsonObject()
        let token = try #require(app["token"]?.stringValue)
        let revealed = try cli.expectSuccess(["app", "show", token, "--reveal-key", "--json"]).jsonObject()
        let resultKey = try #require(Data(base64Encoded: revealed["result_key"]?.stringValue ?? ""))
        return Tenant(
            email: email, apiKey: try #require(key["key"]?.stringValue), token: token, resultKey: Array(resultKey))
    }

    /// A receipt with `count` in-app purchases for `bundleID`, signed by the test PKI.
    func receipt(count: Int = 10, bundleID: String = "com.example.app", tampering: ReceiptBuilder.Tampering = .none)
        throws -> String
    {
        var builder = ReceiptBuilder(inAppPurchaseCount: count)
        builder.bundleID = bundleID
        builder.tampering = tampering
        return try builder.build(signedBy: pki).base64
    }

    /// The service's log so far.
    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }
}

/// A failure of the test set-up itself.
struct SetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

extension CLI {
    /// Runs a command that must succeed.
    @discardableResult
    func expectSuccess(_ arguments: [String]) throws -> CLI.Outcome {
        let outcome = try run(arguments)
        guard outcome.status == 0 else {
            throw SetupError("receiptverify \(arguments.joined(separator: " ")) failed: \(outcome.stderr)")
        }
        return outcome
    }
}

extension CLI.Outcome {
    /// Standard output as a JSON object.
    func jsonObject() throws -> JSONObject {
        guard case .object(let object) = try JSONParser.parse(Array(stdout.utf8)) else {
            throw SetupError("not a JSON object: \(stdout)")
        }
        return object
    }
}

/// Anchors written for the service: the two test roots, which add to Apple's roots built into the binary.
func writeAnchors(to directory: URL, pki: TestPKI, jwsPKI: TestPKI) throws {
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    try Data(pki.rootDER).write(to: directory.appendingPathComponent("test-root.cer"))
    try Data(jwsPKI.rootDER).write(to: directory.appendingPathComponent("test-root-p256.cer"))
}

/// Shared test PKIs: generating RSA keys is slow, and every test may use the same ones.
let sharedPKI = Result { try TestPKI() }
let sharedJWSPKI = Result { try TestPKI(.init(keyType: .p256, name: "ReceiptTestKit P-256")) }

/// Runs `body` against a live service over a fresh database of `kind`; `serveArguments` are added to `serve`.
/// Stops the service with SIGTERM afterwards and expects a clean exit.
func withLiveService<T: Sendable>(
    _ kind: StoreKind, serveArguments: [String] = [], _ body: @Sendable (LiveService) async throws -> T
) async throws -> T {
    try await withCLI(kind) { cli in
        // The fake webhook receivers listen on loopback over plain http: the operator's self-hosted setting.
        var cli = cli
        cli.extraEnvironment["RECEIPTVERIFY_WEBHOOK_PRIVATE_URLS"] = "on"
        return try await FakeApple.run { [cli] apple, appleURL in
            let pki = try sharedPKI.get()
            let jwsPKI = try sharedJWSPKI.get()
            let anchors = cli.directory.appendingPathComponent("anchors")
            try writeAnchors(to: anchors, pki: pki, jwsPKI: jwsPKI)
            try cli.expectSuccess(["migrate"])
            let serve = try await ServeProcess.start(
                cli: cli, anchors: anchors, appleURL: appleURL, arguments: serveArguments, logName: "serve.log")
            let server = serve.process
            let log = serve.log
            defer { if server.isRunning { server.terminate() } }
            let port = serve.port
            let http = HTTPClient(eventLoopGroupProvider: .singleton)
            let service = LiveService(
                cli: cli, baseURL: "http://127.0.0.1:\(port)", apple: apple, http: http, pki: pki, jwsPKI: jwsPKI,
                log: log, processID: server.processIdentifier, anchors: anchors, appleURL: appleURL)
            do {
                let result = try await body(service)
                try await http.shutdown()
                if server.isRunning { server.terminate() }
                server.waitUntilExit()
                #expect(
                    server.terminationStatus == 0,
                    "serve exited with \(server.terminationStatus) (\(server.terminationReason == .uncaughtSignal ? "signal" : "status")); its log:\n\(service.logText.suffix(6_000))"
                )
                return result
            } catch {
                try? await http.shutdown()
                Issue.record("service log:\n\(service.logText)")
                throw error
            }
        }
    }
}

/// One `receiptverify serve` process of a test, its port and its log file.
struct ServeProcess: Sendable {
    let process: Process
    let port: Int
    let log: URL

    var baseURL: String { "http://127.0.0.1:\(port)" }
    var logText: String { (try? String(contentsOf: log, encoding: .utf8)) ?? "" }

    /// Starts `serve` on a free port over the CLI's database, with the test anchors (if any) and the fake Apple;
    /// waits until it listens. `arguments` are added last (a repeated option takes the last value).
    static func start(
        cli: CLI, anchors: URL?, appleURL: String, arguments: [String], logName: String, descriptorLimit: Int? = nil
    ) async throws -> ServeProcess {
        let log = cli.directory.appendingPathComponent(logName)
        FileManager.default.createFile(atPath: log.path, contents: nil)
        let output = try FileHandle(forWritingTo: log)
        let server = try cli.start(
            [
                // Every test client comes from 127.0.0.1: the failure budget per address is for the abuse tests.
                "serve", "--port", "0", "--auth-cache-ttl", "0", "--auth-failures-per-second", "0",
                "--apple-production-url", "\(appleURL)/production/verifyReceipt",
                "--apple-sandbox-url", "\(appleURL)/sandbox/verifyReceipt",
                // Generous: the fake Apple answers from this test process, whose cooperative threads other
                // suites keep busy with CPU-bound work while they run in parallel.
                "--apple-timeout", "10", "--apple-connect-timeout", "2",
                // The whole suite shares two cores, where a database read can wait longer than the 2 s default;
                // the suites that test the deadline set their own.
                "--database-timeout-ms", "10000",
            ] + (anchors.map { ["--trust-anchors", $0.path] } ?? []) + arguments, output: output,
            descriptorLimit: descriptorLimit)
        do {
            return ServeProcess(process: server, port: try await CLI.listeningPort(in: log, of: server), log: log)
        } catch {
            if server.isRunning { server.terminate() }
            throw error
        }
    }

    /// SIGTERM, then waits for the exit (at most 45 s, past the server's own 30 s watchdog; then SIGKILL and -1); returns
    /// the exit status.
    ///
    /// Foundation's `waitUntilExit` was seen to spin forever on Linux after the child had exited (a clean-clone run
    /// hung in it at 100 % CPU), so the child is waited for here, by its pid, with a bound.
    func stop() -> Int32 {
        let pid = process.processIdentifier
        if process.isRunning { process.terminate() }
        let deadline = Date().addingTimeInterval(45)
        while Date() < deadline {
            if !process.isRunning { return process.terminationStatus }
            var status: Int32 = 0
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid {
                // Exited normally: the code is in bits 8-15; killed by a signal: 128 + the signal, as a shell says.
                return status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
            }
            if reaped == -1 { return process.isRunning ? 0 : process.terminationStatus }
            usleep(50_000)
        }
        kill(pid, SIGKILL)
        return -1
    }
}
