import Foundation
import Logging
import PostgresNIO
import ReceiptCore
import ReceiptService
import ServiceLifecycle
import Synchronization

/// The store (``DataStore``: tenancy and usage) on PostgreSQL: pooled, async, safe with many servers on one database.
///
/// The pool runs as a ServiceLifecycle service: call ``run()`` in a long-running task (the server's service group,
/// or ``StoreLocation/withStore(logger:_:)`` for one-off commands) before using the store.
public final class PostgresStore: TenancyStore, UsageStore, Service {
    let client: PostgresClient
    /// The thread the pool's connections and the group commits run on (stopped when the store goes).
    let thread: StoreThread
    let logger: Logger
    let script: MigrationScript

    /// Whether ``run()`` keeps a connection listening for changes (a server does; a one-off CLI command need not).
    let listensForChanges: Bool
    /// How often the listening connection proves it still hears (``heartbeat``).
    let heartbeatInterval: Duration
    /// The longest a ledger transaction waits for a lock (``PostgresURL/defaultLedgerLockTimeout``).
    let ledgerLockTimeout: Duration

    /// Creates a store for the database at `url` (`postgres://user:password@host:port/database?sslmode=…`);
    /// `listensForChanges` makes ``changeMarker()`` work, at the cost of one pooled connection, which sends itself a
    /// heartbeat every `heartbeatInterval`.
    public init(
        url: String, logger: Logger, listensForChanges: Bool = false, heartbeatInterval: Duration = .seconds(2)
    ) throws {
        self.listensForChanges = listensForChanges
        self.heartbeatInterval = heartbeatInterval
        let (configuration, ledgerLockTimeout) = try PostgresURL.configuration(from: url)
        self.ledgerLockTimeout = ledgerLockTimeout
        self.script = try MigrationScript(String(decoding: PackageResources.schema_sql, as: UTF8.self))
        // Last: nothing throws once the thread runs (a store that failed to initialize would never stop it).
        let thread = StoreThread()
        self.thread = thread
        self.client = PostgresClient(
            configuration: configuration, eventLoopGroup: thread.eventLoopGroup, backgroundLogger: logger)
        ledgerGroups = LedgerGroupCommit(on: thread)
        notificationGroups = GroupCommit("notifications", on: thread)
        self.logger = logger
    }

    /// Runs the connection pool until the task is cancelled or a graceful shutdown begins; with `listensForChanges`,
    /// keeps one of its connections listening on ``changeChannel``.
    public func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.client.run() }
            if listensForChanges { group.addTask { await self.listenForChanges() } }
            // The pool ends on cancellation or graceful shutdown; the listener goes with it.
            await group.next()
            group.cancelAll()
        }
    }

    deinit {
        thread.shutdown()
    }

    /// The channel plan and account changes are announced on (`pg_notify` in the change's transaction). New
    /// accounts and changes to keys and apps are not announced: servers see keys and apps when their authentication
    /// cache entries expire.
    static let changeChannel = "receiptverify_changes"
    /// The payload on ``changeChannel`` of status writes, which move ``statusChangeMarker()`` only.
    static let statusChange = "statuses"
    /// The payload on ``changeChannel`` of recordings that inserted ledger rows or recorded for a user, which move
    /// ``customerChangeMarker()`` only.
    static let customerChange = "customers"
    /// The payload on ``changeChannel`` of the listening connections' heartbeats, which move no marker.
    static let heartbeat = "heartbeat"
    /// Heartbeats missed before the listening connection counts as deaf (and is closed and opened again).
    static let missedHeartbeats = 3

    /// An absent number in the arrays a multi-row statement sends, one per column (arrays of optionals are not
    /// encodable), which `NULLIF` turns back into NULL.
    static let absentNumber = Int64.min
    /// An absent text in those arrays: U+0001, never in Apple's ids or names.
    static let absentText = "\u{1}"

    /// Notifications received (those of status writes apart), whether a connection is listening now, and when it
    /// last heard anything on the channel.
    let changes = Mutex<(count: Int, statuses: Int, customers: Int, listening: Bool, heardAt: ContinuousClock.Instant)>(
        (0, 0, 0, false, .now))
    /// The group commit of ledger recordings (``record(_:)``).
    let ledgerGroups: LedgerGroupCommit
    /// The group commit of notifications (``recordNotification(_:)``).
    let notificationGroups: GroupCommit<NotificationRecord, NotificationRecorded>

    /// Counts notifications on ``changeChannel`` while a connection listens and has heard its heartbeat lately; nil
    /// (reuse nothing) otherwise, so that neither a lost connection nor a silently dead one (a NAT timeout, a
    /// failover without a reset) can leave a server trusting a stale cache.
    public func changeMarker() -> Int? {
        changes.withLock { isHearing($0) ? $0.count : nil }
    }

    /// Counts the status writes announced on ``changeChannel`` (payload `statuses`), and moves with every other
    /// change too (a reconnection among them).
    public func statusChangeMarker() -> Int? {
        changes.withLock { isHearing($0) ? $0.count &+ $0.statuses : nil }
    }

    /// Moves with every announcement but the heartbeats: changes, status writes, and customers' new rows and claims.
    public func customerChangeMarker() -> Int? {
        changes.withLock { isHearing($0) ? $0.count &+ $0.statuses &+ $0.customers : nil }
    }

    private func isHearing(
        _ state: (count: Int, statuses: Int, customers: Int, listening: Bool, heardAt: ContinuousClock.Instant)
    )
        -> Bool
    {
        state.listening && state.heardAt.duration(to: .now) <= heartbeatInterval * Self.missedHeartbeats
    }

    /// Keeps a connection listening on ``changeChannel``. The connection notifies the channel itself every
    /// ``heartbeatInterval`` (PostgreSQL delivers a session's own notifications to it, after a round trip through
    /// the server); when nothing has been heard for ``missedHeartbeats`` intervals the connection is closed and another
    /// one listens, the marker moving at each change of connection.
    func listenForChanges() async {
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            do {
                try await client.withConnection { connection in
                    try await connection.listen(on: Self.changeChannel) { notifications in
                        self.changes.withLock {
                            $0.count += 1
                            $0.listening = true
                            $0.heardAt = .now
                        }
                        try await withThrowingTaskGroup(of: Void.self) { group in
                            group.addTask {
                                for try await notification in notifications {
                                    let payload = notification.payload
                                    self.changes.withLock {
                                        $0.heardAt = .now
                                        if payload == Self.statusChange {
                                            $0.statuses += 1
                                        } else if payload == Self.customerChange {
                                            $0.customers += 1
                                        } else if payload != Self.heartbeat {
                                            $0.count += 1
                                        }
                                    }
                                }
                            }
                            group.addTask { try await self.beat(on: connection) }
                            // Whichever ends first (the connection failed, or it went deaf) ends the listening.
                            _ = try await group.next()
                            group.cancelAll()
                        }
                    }
                }
            } catch {
                if !Task.isCancelled { logger.warning("not listening for changes", metadata: ["error": "\(error)"]) }
            }
            changes.withLock {
                $0.count += 1
                $0.listening = false
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(1)) }
        }
    }

    /// Sends the heartbeat every ``heartbeatInterval`` on `connection` (without waiting for its answer: a deaf
    /// connection never answers), and returns once nothing has been heard for ``missedHeartbeats`` intervals,
    /// having closed the connection.
    private func beat(on connection: PostgresConnection) async throws {
        let query: PostgresQuery = "SELECT pg_notify(\(Self.changeChannel), \(Self.heartbeat))"
        while true {
            Task { try? await connection.query(query, logger: logger) }
            try await Task.sleep(for: heartbeatInterval)
            let heard = changes.withLock { $0.heardAt }
            if heard.duration(to: .now) > heartbeatInterval * Self.missedHeartbeats {
                logger.warning(
                    "the connection listening for changes went silent; listening on another",
                    metadata: ["silent_seconds": "\(heard.duration(to: .now).components.seconds)"])
                try? await connection.close()
                return
            }
        }
    }

    func run<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as ServiceError {
            throw error
        } catch {
            throw Self.map(error)
        }
    }

    func transaction<T: Sendable>(_ body: (PostgresConnection) async throws -> T) async throws -> T {
        try await run {
            do {
                return try await client.withTransaction(logger: logger) { connection in try await body(connection) }
            } catch let error as PostgresTransactionError {
                // Our own refusal from inside the transaction (rolled back) stays ours, not a storage failure.
                if error.rollbackError == nil, let refusal = error.closureError as? ServiceError { throw refusal }
                // A constraint the transaction broke (a taken email) is reported as it is outside a transaction.
                if error.rollbackError == nil, let failure = error.closureError as? PSQLError {
                    throw Self.map(failure)
                }
                throw error
            }
        }
    }

    @discardableResult
    func rows(_ query: PostgresQuery, on connection: PostgresConnection? = nil) async throws
        -> [PostgresRandomAccessRow]
    {
        let sequence =
            if let connection {
                try await connection.query(query, logger: logger)
            } else {
                try await client.query(query, logger: logger)
            }
        var rows: [PostgresRandomAccessRow] = []
        for try await row in sequence { rows.append(row.makeRandomAccess()) }
        return rows
    }

    static func map(_ error: any Error) -> ServiceError {
        if let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] {
            let constraint = error.serverInfo?[.constraintName] ?? ""
            switch (state, constraint) {
            case ("23505", "accounts_email_key"):
                return ServiceError(.duplicateEmail, "an account with this email already exists")
            case ("23503", _):
                return ServiceError(.invalidArgument, "a referenced plan or account does not exist")
            default:
                let message = error.serverInfo?[.message] ?? ""
                return ServiceError(.storage, "PostgreSQL \(state): \(message)")
            }
        }
        return ServiceError(.storage, "PostgreSQL: \(String(reflecting: error))")
    }

    /// A key for `pg_advisory_xact_lock` that serializes migrations across servers.
    static let migrationLockKey = 0x5256_4D49_4752  // "RVMIGR"

    public func migrate() async throws { try await migrate(through: nil) }

    /// Applies the migrations not yet applied, up to version `last` (nil: every one; a test stops earlier to write
    /// rows as an older version did).
    func migrate(through last: Int?) async throws {
        try await transaction { connection in
            try await self.rows("SELECT pg_advisory_xact_lock(\(Self.migrationLockKey))", on: connection)
            for statement in self.script.preamble {
                try await self.rows(PostgresQuery(unsafeSQL: statement), on: connection)
            }
        }
        for migration in script.migrations where last.map({ migration.version <= $0 }) ?? true {
            try await transaction { connection in
                try await self.rows("SELECT pg_advisory_xact_lock(\(Self.migrationLockKey))", on: connection)
                let applied = try await self.rows(
                    "SELECT 1 FROM schema_migrations WHERE version = \(migration.version)", on: connection)
                guard applied.isEmpty else { return }
                for statement in migration.statements {
                    try await self.rows(PostgresQuery(unsafeSQL: statement), on: connection)
                }
                try await self.rows(
                    "INSERT INTO schema_migrations (version, description) VALUES (\(migration.version), \(migration.description))",
                    on: connection)
            }
        }
    }
}
