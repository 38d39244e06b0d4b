import Foundation
import Logging
import NIOCore
import NIOPosix
import ReceiptCore
import ReceiptService
import SQLiteNIO
import Synchronization

// `fstat` for the change files' sizes; `struct stat` is declared in the C headers CoreFoundation exposes.
#if canImport(Glibc)
    import CoreFoundation
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The store (``DataStore``: tenancy and usage) on an SQLite file: the zero set-up default.
///
/// One connection, in WAL mode with a busy timeout so the CLI and a running server can share the file. Every
/// operation holds an in-process lock for its duration, so a transaction never interleaves with another call.
public final class SQLiteStore: TenancyStore, UsageStore {
    let connection: SQLiteConnection
    /// The connection's own thread: SQLite calls block (a busy wait can last seconds), so they must not hold
    /// threads that other connections or NIO need.
    let threadPool: NIOThreadPool
    /// Where the connection completes its operations outside group commits.
    let thread: StoreThread
    let lock = AsyncLock()
    let script: MigrationScript
    /// The ledger's change file beside the database (`…-ledger`), open for appending: a committed change to an
    /// existing ledger row appends a byte, so its size is ``ledgerChangeMarker()`` in every process using the file.
    let ledgerChanges: Int32
    /// The statuses' change file (`…-statuses`), as the ledger's: a committed status write appends a byte.
    let statusChanges: Int32
    /// The customers' change file (`…-customers`), as the ledger's: a committed recording that inserted rows or
    /// recorded for a user appends a byte.
    let customerChanges: Int32
    /// The group commit of ledger recordings (``record(_:)``).
    let ledgerGroups: LedgerGroupCommit
    /// The group commit of notifications (``recordNotification(_:)``).
    let notificationGroups: GroupCommit<NotificationRecord, NotificationRecorded>

    private init(
        connection: SQLiteConnection, threadPool: NIOThreadPool, thread: StoreThread, script: MigrationScript,
        path: String, ledgerChanges: Int32, statusChanges: Int32, customerChanges: Int32
    ) {
        self.connection = connection
        self.threadPool = threadPool
        self.thread = thread
        // The group commits run on the connection's own thread: each statement of a group resumes where it ran.
        let poolExecutor = ThreadPoolExecutor(threadPool)
        ledgerGroups = LedgerGroupCommit(on: poolExecutor)
        notificationGroups = GroupCommit("notifications", on: poolExecutor)
        self.script = script
        self.ledgerChanges = ledgerChanges
        self.statusChanges = statusChanges
        self.customerChanges = customerChanges
    }

    /// What follows a database's path in the names of the files the store keeps: the database itself, SQLite's
    /// write-ahead log and shared memory, and the change files of the ledger, the statuses and the customers. Whoever
    /// removes a database removes all of them.
    public static let fileSuffixes = ["", "-wal", "-shm", "-ledger", "-statuses", "-customers"]

    /// Opens (creating if needed) the database file at `path`.
    public static func open(path: String, logger: Logger) async throws -> SQLiteStore {
        let script = try MigrationScript(String(decoding: PackageResources.sqlite_schema_sql, as: UTF8.self))
        let isNew = !FileManager.default.fileExists(atPath: path)
        let threadPool = NIOThreadPool(numberOfThreads: 1)
        threadPool.start()
        let thread = StoreThread()
        let connection: SQLiteConnection
        do {
            connection = try await SQLiteConnection.open(
                storage: .file(path: path), threadPool: threadPool, logger: logger, on: thread.eventLoop)
        } catch {
            thread.shutdown()
            try? await threadPool.shutdownGracefully()
            throw ServiceError(.storage, "cannot open SQLite database \(path): \(error)")
        }
        // Readable and writable by the owner only, as the database.
        let ledgerChanges = openForAppending(path + "-ledger")
        let statusChanges = openForAppending(path + "-statuses")
        let customerChanges = openForAppending(path + "-customers")
        guard ledgerChanges >= 0, statusChanges >= 0, customerChanges >= 0 else {
            let error = errno
            for descriptor in [ledgerChanges, statusChanges, customerChanges] where descriptor >= 0 {
                _ = closeFile(descriptor)
            }
            try? await connection.close()
            thread.shutdown()
            try? await threadPool.shutdownGracefully()
            throw ServiceError(
                .storage, "cannot open the change files \(path)-ledger, -statuses and -customers: errno \(error)")
        }
        let store = SQLiteStore(
            connection: connection, threadPool: threadPool, thread: thread, script: script, path: path,
            ledgerChanges: ledgerChanges, statusChanges: statusChanges, customerChanges: customerChanges)
        // The file holds key hashes and sealed secrets: readable by its owner only.
        if isNew { _ = chmod(path, 0o600) }
        do {
            try await store.run {
                // The timeout waits out another process's write; WAL lets readers proceed while one writer commits.
                _ = try await connection.query("PRAGMA busy_timeout = 5000")
                _ = try await connection.query("PRAGMA journal_mode = WAL")
                _ = try await connection.query("PRAGMA foreign_keys = ON")
                _ = try await connection.query("PRAGMA synchronous = NORMAL")
            }
        } catch {
            try? await store.close()
            throw error
        }
        return store
    }

    /// Closes the connection and stops its thread.
    public func close() async throws {
        defer {
            _ = closeFile(ledgerChanges)
            _ = closeFile(statusChanges)
            _ = closeFile(customerChanges)
            threadPool.shutdownGracefully { _ in }
            thread.shutdown()
        }
        try await connection.close()
    }

    func run<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        do {
            return try await lock.withLock(body)
        } catch let error as ServiceError {
            throw error
        } catch {
            throw SQLiteStore.map(error)
        }
    }

    /// Runs `body` in one transaction (`BEGIN IMMEDIATE`: the database's write lock), committed if it returns and
    /// rolled back if it throws.
    ///
    /// A cancelled task's statements never reach the connection (NIO's thread pool drops the work of a cancelled
    /// task), so the rollback runs in a task of its own: issued from the cancelled caller, it was dropped too, and left
    /// the connection inside the transaction, holding the write lock, every later `BEGIN` failing (found by the money
    /// simulator's stalling server, whose deadline cancels work in the middle of a transaction).
    func transaction<T: Sendable>(_ body: @Sendable () async throws -> T) async throws -> T {
        try await run {
            _ = try await self.connection.query("BEGIN IMMEDIATE")
            do {
                let result = try await body()
                _ = try await self.connection.query("COMMIT")
                return result
            } catch {
                let connection = self.connection
                _ = await Task { try? await connection.query("ROLLBACK") }.value
                throw error
            }
        }
    }

    func query(_ sql: String, _ binds: [SQLiteData] = []) async throws -> [SQLiteRow] {
        try await connection.query(sql, binds)
    }

    static func map(_ error: any Error) -> ServiceError {
        let message = String(describing: error)
        if message.contains("UNIQUE constraint failed: accounts.email") {
            return ServiceError(.duplicateEmail, "an account with this email already exists")
        }
        if message.contains("FOREIGN KEY constraint failed") {
            return ServiceError(.invalidArgument, "a referenced plan or account does not exist")
        }
        return ServiceError(.storage, "SQLite: \(message)")
    }

    /// Applies the migrations not applied yet, each in its own transaction. Processes opening a new database at once
    /// (servers and the CLI starting together) take turns: a step that finds the database locked past the busy
    /// timeout (a loaded machine, nineteen steps each) is tried again, for up to a minute, rather than fail and leave
    /// the opener to close a connection in the middle of an error.
    public func migrate() async throws { try await migrate(through: nil) }

    /// Applies the migrations not yet applied, up to version `last` (nil: every one; a test stops earlier to write
    /// rows as an older version did).
    func migrate(through last: Int?) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                try await migrateOnce(through: last)
                return
            } catch let error as ServiceError
                where error.code == .storage && Self.isLocked(error.reason) && ContinuousClock.now < deadline
            {
                try await Task.sleep(for: .milliseconds(Int.random(in: 50...250)))
            }
        }
    }

    /// Whether an error is SQLite's "the database is locked" (SQLITE_BUSY), which a later attempt may pass.
    static func isLocked(_ reason: String) -> Bool {
        reason.contains("database is locked") || reason.contains("SQLITE_BUSY") || reason.contains("busy")
    }

    private func migrateOnce(through last: Int?) async throws {
        try await run {
            for statement in self.script.preamble { _ = try await self.query(statement) }
        }
        for migration in script.migrations where last.map({ migration.version <= $0 }) ?? true {
            try await transaction {
                let applied = try await self.query(
                    "SELECT 1 FROM schema_migrations WHERE version = ?", [.integer(migration.version)])
                guard applied.isEmpty else { return }
                for statement in migration.statements { _ = try await self.query(statement) }
                _ = try await self.query(
                    "INSERT INTO schema_migrations (version, description, applied_at) VALUES (?, ?, ?)",
                    [.integer(migration.version), .text(migration.description), .millis(Date())])
            }
        }
    }

    /// The size of the ledger change file: every process's committed changes to existing ledger rows, plans and
    /// accounts, counted (``LedgerStore/ledgerChangeMarker()``). One `fstat`.
    public func ledgerChangeMarker() -> Int? { changesCounted(in: ledgerChanges) }

    /// Counts a committed change to existing ledger rows, a plan or an account, after its commit (a reader that sees
    /// the new count reads the change).
    func announceLedgerChange() { countChange(in: ledgerChanges) }

    /// The size of the statuses' change file: every process's committed status writes, counted
    /// (``NotificationStore/statusChangeMarker()``). One `fstat`.
    public func statusChangeMarker() -> Int? { changesCounted(in: statusChanges) }

    /// Counts committed status writes, after their commit.
    func announceStatusChange() { countChange(in: statusChanges) }

    /// The three change files' sizes together (``NotificationStore/customerChangeMarker()``). Three `fstat`s.
    public func customerChangeMarker() -> Int? {
        guard let ledger = changesCounted(in: ledgerChanges), let statuses = changesCounted(in: statusChanges),
            let customers = changesCounted(in: customerChanges)
        else { return nil }
        var hasher = Hasher()
        hasher.combine(ledger)
        hasher.combine(statuses)
        hasher.combine(customers)
        return hasher.finalize()
    }

    /// Counts a committed recording that inserted rows or recorded for a user, after its commit.
    func announceCustomerChange() { countChange(in: customerChanges) }

    /// The ledger change file's size (``ledgerChangeMarker()``): it counts every process's committed plan and account
    /// changes too (``savePlan(_:)``, ``updateAccount(_:)``), as PostgreSQL's notifications do. One `fstat`, no query;
    /// nil when the file cannot be read (nothing is then reused). A usage flush does not move it: the usage gate
    /// bounds the age of other servers' counts by itself, and keeps its own arithmetic exact across its flushes.
    public func changeMarker() -> Int? { ledgerChangeMarker() }
}

extension SQLiteData {
    static func uuid(_ id: UUID) -> SQLiteData { .text(id.uuidString.lowercased()) }
    static func bool(_ value: Bool) -> SQLiteData { .integer(value ? 1 : 0) }
    static func millis(_ date: Date?) -> SQLiteData { date.map { .integer(StoredForm.millis($0)) } ?? .null }
    static func bytes(_ bytes: [UInt8]?) -> SQLiteData { bytes.map { .blob(ByteBuffer(bytes: $0)) } ?? .null }

    var bytes: [UInt8]? { blob.map { Array($0.readableBytesView) } }

    func requireText() throws -> String {
        guard case .text(let text) = self else { throw StoredForm.corrupt("expected text, found \(self)") }
        return text
    }

    func requireInt() throws -> Int {
        guard case .integer(let value) = self else { throw StoredForm.corrupt("expected an integer, found \(self)") }
        return Int(value)
    }

    func requireBool() throws -> Bool { try requireInt() != 0 }
    func requireDate() throws -> Date { StoredForm.date(millis: try requireInt()) }

    func requireBytes() throws -> [UInt8] {
        guard let bytes else { throw StoredForm.corrupt("expected a blob, found \(self)") }
        return bytes
    }

    func requireUUID() throws -> UUID {
        guard let id = UUID(uuidString: try requireText()) else { throw StoredForm.corrupt("expected a UUID") }
        return id
    }
}

extension Optional where Wrapped == SQLiteRow {
    func require(_ column: String) throws -> SQLiteData {
        guard let self else { throw StoredForm.corrupt("expected a row") }
        return try self.require(column)
    }
}

extension SQLiteRow {
    func require(_ column: String) throws -> SQLiteData {
        guard let value = self.column(column), !value.isNull else {
            throw StoredForm.corrupt("column \(column) is missing or null")
        }
        return value
    }
}

/// `open(2)` for appending, created readable and writable by the owner only; -1 on failure.
private func openForAppending(_ path: String) -> Int32 {
    #if canImport(Glibc)
        Glibc.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
    #else
        Darwin.open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
    #endif
}

/// The size of a change file (its count of changes); nil when it cannot be read.
private func changesCounted(in descriptor: Int32) -> Int? {
    var info = stat()
    guard fstat(descriptor, &info) == 0 else { return nil }
    return Int(info.st_size)
}

/// Appends one change to a change file opened for appending.
private func countChange(in descriptor: Int32) {
    var byte: UInt8 = 1
    _ = write(descriptor, &byte, 1)
}

/// `close(2)`.
private func closeFile(_ descriptor: Int32) -> Int32 {
    #if canImport(Glibc)
        Glibc.close(descriptor)
    #else
        Darwin.close(descriptor)
    #endif
}
