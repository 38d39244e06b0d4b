import Foundation

/// The built `receiptverify` executable, run as an operator would run it, in a scratch directory.
public struct CLI: Sendable {
    /// The outcome of one command.
    public struct Outcome: Sendable {
        public let status: Int32
        public let stdout: String
        public let stderr: String

        /// Standard output decoded as JSON.
        public func json<T: Decodable>(_ type: T.Type = T.self) throws -> T {
            try JSONDecoder().decode(T.self, from: Data(stdout.utf8))
        }
    }

    public let directory: URL
    public let database: String
    public var extraEnvironment: [String: String] = [:]

    /// A CLI over `database`, run in `directory`.
    public init(directory: URL, database: String, extraEnvironment: [String: String] = [:]) {
        self.directory = directory
        self.database = database
        self.extraEnvironment = extraEnvironment
    }

    /// The executable: `RECEIPTVERIFY_BIN`, or `receiptverify` beside the test bundle.
    public static var binary: URL {
        if let path = ProcessInfo.processInfo.environment["RECEIPTVERIFY_BIN"] { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("receiptverify")
    }

    /// The environment of every command: the test's, minus any RECEIPTVERIFY_ setting, plus this CLI's database.
    public var environment: [String: String] {
        var environment = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("RECEIPTVERIFY_") }
        environment["RECEIPTVERIFY_DATABASE_URL"] = database
        environment["RECEIPTVERIFY_MASTER_KEY_FILE"] = directory.appendingPathComponent("master.key").path
        environment.merge(extraEnvironment) { _, new in new }
        return environment
    }

    /// Starts the executable with `arguments` in the scratch directory; with `descriptorLimit`, under that
    /// open-file limit (soft and hard, as `ulimit -n` sets it).
    public func start(_ arguments: [String], output: FileHandle? = nil, descriptorLimit: Int? = nil) throws -> Process {
        let process = Process()
        if let descriptorLimit {
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments =
                ["-c", "ulimit -n \(descriptorLimit) && exec \"$0\" \"$@\"", Self.binary.path] + arguments
        } else {
            process.executableURL = Self.binary
            process.arguments = arguments
        }
        process.currentDirectoryURL = directory
        process.environment = environment
        if let output {
            process.standardOutput = output
            process.standardError = output
        }
        try launch(process)
        return process
    }

    /// Waits (at most 30 s) for the "listening on 127.0.0.1:PORT" line a `serve --port 0` writes to `log`; returns the
    /// port. Throws, with the log, if the server exits first.
    public static func listeningPort(in log: URL, of server: Process) async throws -> Int {
        let marker = "listening on 127.0.0.1:"
        for _ in 0..<600 {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if let range = text.range(of: marker) {
                let digits = text[range.upperBound...].prefix { $0.isNumber }
                if let port = Int(digits) { return port }
            }
            guard server.isRunning else { throw TestSetupError("serve exited: \(text)") }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestSetupError("serve did not start listening: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
    }

    /// Runs one command to completion.
    @discardableResult
    public func callAsFunction(_ arguments: String...) throws -> Outcome { try run(arguments) }

    /// Runs one command to completion, with `input` on its standard input.
    public func run(_ arguments: [String], input: Data? = nil) throws -> Outcome {
        let stdin = Pipe()
        let stdout = Pipe()
        let stderr = Pipe()
        let process = Process()
        process.executableURL = Self.binary
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.environment = environment
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        try launch(process)
        if let input {
            stdin.fileHandleForWriting.write(input)
            try stdin.fileHandleForWriting.close()
        }
        let out = stdout.fileHandleForReading.readDataToEndOfFile()
        let err = stderr.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(
            status: process.terminationStatus, stdout: String(decoding: out, as: UTF8.self),
            stderr: String(decoding: err, as: UTF8.self))
    }
}

/// Runs `body` with a CLI over a fresh database of `kind` in a scratch directory.
public func withCLI<T: Sendable>(_ kind: StoreKind, _ body: @Sendable (CLI) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { directory in
        switch kind {
        case .sqlite:
            return try await body(
                CLI(directory: directory, database: directory.appendingPathComponent("rv.sqlite").path))
        case .postgres:
            return try await TestPostgres.withDatabase { url in try await body(CLI(directory: directory, database: url))
            }
        }
    }
}
