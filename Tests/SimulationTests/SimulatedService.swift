import Clients
import Fakes
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import MoneyModel
import NIOCore
import ReceiptCore
import ReceiptServer
import ReceiptService
import ReceiptStore
import ReceiptTestKit
import Synchronization
import TestSupport

/// The real service in process, over a real store, as the simulator drives it: two servers as `serve` builds them (the
/// routes, the middleware, the ledger, the customer views, each with its own caches and its own connection to one
/// database, as two processes behind a balancer, each restarted where a history says: ``ServerPool``), one account,
/// and a fresh app for every history, so that histories played one after another on one database never see each
/// other's transactions. A third server, whose database deadline is a few milliseconds, plays a database that stalls:
/// what it answers 503 the client sends again to another.
struct SimulatedService: Sendable {
    /// The PKI that signs StoreKit 2 items and notifications; the apps trust its root as test data.
    static let pki = try! TestPKI(TestPKI.Options(keyType: .p256, name: "Simulator"))

    let tenancy: TenancyService
    /// The two servers; a history says which one each step goes to, and when one restarts.
    let servers: ServerPool
    /// The server whose database stalls (``stallingDeadline(_:)``), over a connection of its own.
    let stallingClient: any TestClientProtocol
    /// The index that names the stalling server in ``post(_:form:server:)``.
    static let stalling = -1
    /// The stalling server's database deadline on `kind` (`SIMULATION_STALL_MS` to try another): short enough that a
    /// request often runs out of it, at any point of its reads and its group commit, and is answered 503. Measured
    /// on two shared cores: 3 ms on SQLite and 10 ms on PostgreSQL answer a third to four fifths of the
    /// presentations 503 (more under load); 1 ms answers all of them (their first read), 30 ms none.
    static func stallingDeadline(_ kind: StoreKind) -> Duration {
        .milliseconds(
            ProcessInfo.processInfo.environment["SIMULATION_STALL_MS"].flatMap(Int.init) ?? (kind == .sqlite ? 3 : 10))
    }
    /// The simulator's accounts: how many apps were made, and each account's API key.
    let accounts: Accounts
    /// Google (the OAuth grants, the Play Developer API, Pub/Sub's OIDC keys) on loopback, as every suite has it, and
    /// the service account every app's key is of (one key: a 2048-bit RSA key per app would cost more than a history).
    let google: FakeGoogle
    let googleAccount: FakeGoogle.Account
    /// The Google Play purchases delivered (in `once` by the answer that said `deliver: true`, in `confirm` by the
    /// confirmation), which Google must see acknowledged or consumed (invariant 5).
    let googleDeliveries = GoogleDeliveries()
    /// The billable answers the servers gave, by API key (invariant 6).
    let verdicts: Verdicts

    /// The answers that count as billable usage, by the API key that asked (docs/billing.md: a call that reached a
    /// verdict: status 0, 403, or one of Apple's verdict codes; never a 503, a 401 or Apple's own failures).
    final class Verdicts: Sendable {
        private let counts = Mutex<[String: Int]>([:])
        /// The first and last instant an answer was counted (the usage months to read).
        private let span = Mutex<(first: Date, last: Date)?>(nil)

        /// The routes the simulator calls that are billed (docs/api.md; a confirmation of deliveries is not).
        static let billedRoutes: Set<String> = ["/api", "/api/customers"]

        static func isBillable(_ status: Int) -> Bool {
            switch status {
            case 0, 403: true
            case 21005, 21009: false
            case 21000...21099: true
            default: false
            }
        }

        func count(apiKey: String, status: Int) {
            guard Self.isBillable(status) else { return }
            counts.withLock { $0[apiKey, default: 0] += 1 }
            let now = Date()
            span.withLock { $0 = ($0?.first ?? now, now) }
        }

        var byKey: [String: Int] { counts.withLock { $0 } }
        var months: [UsageMonth] {
            guard let (first, last) = span.withLock({ $0 }) else { return [] }
            var months = [UsageMonth(containing: first)]
            while let month = months.last, month < UsageMonth(containing: last) { months.append(month.next) }
            return months
        }
    }

    /// Counts the servers logged lost when they stopped ("usage counts could not be written before stopping"), by
    /// account id.
    final class LostUsage: Sendable {
        private let lost = Mutex<[String: Int]>([:])

        var byAccount: [String: Int] { lost.withLock { $0 } }

        /// A log handler that keeps those counts and drops every other line (the simulator logs nothing else).
        var handler: Handler { Handler(lost: self) }

        struct Handler: LogHandler {
            let lost: LostUsage
            var logLevel: Logger.Level = .error
            var metadata: Logger.Metadata = [:]

            subscript(metadataKey key: String) -> Logger.Metadata.Value? {
                get { metadata[key] }
                set { metadata[key] = newValue }
            }

            func log(event: LogEvent) {
                guard case .string(let account)? = event.metadata?["account.id"],
                    case .string(let calls)? = event.metadata?["usage.lost_calls"], let number = Int(calls)
                else { return }
                lost.lost.withLock { $0[account, default: 0] += number }
            }
        }
    }

    /// The audience and the service account of every app's Pub/Sub push subscription.
    static let pushAudience = "https://rv.example.com/notifications/google"
    static let pushAccount = "rtdn-push@receiptverify-test.iam.gserviceaccount.com"

    /// The Google Play purchases the service delivered, each as the fake Google names what acknowledges or consumes it
    /// (`PACKAGE/products/PRODUCT/TOKEN`, `PACKAGE/subscriptions/PRODUCT/TOKEN`), with the seed that delivered it.
    actor GoogleDeliveries {
        private(set) var delivered: [String: (consumes: Bool, seed: UInt64)] = [:]
        /// Purchases a server in `once` may have delivered, or one in `confirm` only offered, right after a switch to
        /// `confirm`: Google may or may not be told.
        private(set) var undetermined: Set<String> = []

        func add(_ key: String, consumes: Bool, seed: UInt64, settled: Bool = true) {
            if settled {
                delivered[key] = delivered[key] ?? (consumes, seed)
            } else {
                undetermined.insert(key)
            }
        }
    }

    /// How long a server holds an app's settings (its delivery mode among them): production's default, which the
    /// simulated servers keep.
    static let authenticationCacheTTL = ServerConfiguration().authenticationCacheTTL

    /// Shared by copies of the service: each app's account, made once, with its API key.
    actor Accounts {
        private var apps = 0
        private var keys: [Int: Task<String, any Error>] = [:]

        /// The account whose key is `key`.
        func email(ofKey key: String) async -> String? {
            for (index, made) in keys where (try? await made.value) == key { return "sim-\(index)@example.test" }
            return nil
        }

        /// The account the next app goes to and its key: each account takes 10 histories, as accounts hold a few
        /// apps (adding an app with Android packages reads the account's other apps, to refuse a package another app
        /// of the account holds: with every history's app in one account, that read grew with the run, and at 100
        /// apps an account it was still a fifteenth of a history's cost on SQLite).
        func next(in tenancy: TenancyService) async throws -> (email: String, key: String, app: Int) {
            let index = apps / 10
            apps += 1
            let app = apps
            let email = "sim-\(index)@example.test"
            if let made = keys[index] { return (email, try await made.value, app) }
            let making = Task {
                _ = try await tenancy.createAccount(name: "Sim", email: email, planName: "simulation")
                return try await tenancy.createAPIKey(account: email, label: nil).clearText
            }
            keys[index] = making
            return (email, try await making.value, app)
        }
    }

    /// Runs `body` with the service over a fresh store of `kind`; then stops the servers and checks invariant 6
    /// (returned, nil when it held).
    static func with<T: Sendable>(_ kind: StoreKind, _ body: @Sendable (SimulatedService) async throws -> T)
        async throws -> (T, usage: String?)
    {
        try await withTestStore(kind) { store, location in
            let lost = LostUsage()
            let logger = Logger(label: "simulator", factory: { _ in lost.handler })
            let verdicts = Verdicts()
            let masterKey = MasterKey.generate()
            let tenancy = TenancyService(store: store, masterKey: masterKey)
            _ = try await tenancy.setPlan(
                name: "simulation", monthlyQuota: .some(nil), rateLimitPerSecond: 1_000_000,
                includesEncryptedEndpoint: true, monthlyPriceCents: nil, overagePricePer1000Cents: nil,
                limits: [.apps: 100_000])
            let google = FakeGoogle()
            let googleAccount = try FakeGoogle.Account.make()
            google.add(googleAccount)
            return try await withLoopbackServer(google.router(), label: "fake-google") { googleURL in
                let googlePlay = GooglePlayConfiguration(
                    apiURL: googleURL, tokenURL: googleURL + "/token", pushKeysURL: googleURL + "/oauth2/v3/certs")
                // One client of Google's API for the three servers (each process has its own in production; the
                // fake's purchases do not change while a history plays, so a shared answer cache changes nothing).
                let client = GooglePlayClient(configuration: googlePlay, logger: logger)
                do {
                    let accounts = Accounts()
                    let result = try await withServers(
                        kind, location: location, masterKey: masterKey, googlePlay: googlePlay,
                        client: client, logger: logger
                    ) { servers, stallingClient in
                        try await body(
                            SimulatedService(
                                tenancy: tenancy, servers: servers, stallingClient: stallingClient,
                                accounts: accounts, google: google, googleAccount: googleAccount,
                                verdicts: verdicts))
                    }
                    try await client.shutdown()
                    // The servers have stopped, each after its last usage flush.
                    let usage = try await checkUsage(
                        verdicts, lost: lost.byAccount, accounts: accounts, tenancy: tenancy)
                    return (result, usage)
                } catch {
                    try? await client.shutdown()
                    throw error
                }
            }
        }
    }

    /// Invariant 6, once the servers stopped: each account's usage as the store holds it is at most the billable
    /// answers its key was given (nothing counted twice or without an answer), and at least those answers less the
    /// counts the servers logged lost when they stopped (nothing lost silently). A count is logged lost when its flush
    /// was not confirmed by the stop: a flush given up at its deadline may still land, so the two bounds are not one
    /// number while a server's database stalls.
    private static func checkUsage(
        _ verdicts: Verdicts, lost: [String: Int], accounts: Accounts, tenancy: TenancyService
    ) async throws -> String? {
        for (key, answered) in verdicts.byKey.sorted(by: { $0.key < $1.key }) {
            guard let email = await accounts.email(ofKey: key) else { return "an API key of no simulator account" }
            let account = try await tenancy.account(email)
            var stored = 0
            for month in verdicts.months {
                stored += try await tenancy.usage(month: month, account: email, appToken: nil).reduce(0) {
                    $0 + $1.calls
                }
            }
            let logged = lost[account.id.uuidString.lowercased()] ?? 0
            guard stored <= answered, answered <= stored + logged else {
                return "invariant 6: \(email) was given \(answered) billable answers; the store counts \(stored) and "
                    + "the servers logged \(logged) lost"
            }
        }
        return nil
    }

    /// Runs `body` with the two servers and the stalling server's client; stops the servers after it.
    private static func withServers<T: Sendable>(
        _ kind: StoreKind, location: StoreLocation, masterKey: MasterKey, googlePlay: GooglePlayConfiguration,
        client: GooglePlayClient, logger: Logger,
        _ body: @Sendable (ServerPool, any TestClientProtocol) async throws -> T
    ) async throws -> T {
        @Sendable func server(_ store: any DataStore, deadline: Duration = .seconds(15)) throws
            -> Application<RouterResponder<ServerContext>>
        {
            try SimulatedService.server(
                TenancyService(store: store, masterKey: masterKey), deadline: deadline, googlePlay: googlePlay,
                client: client, logger: logger)
        }
        // Each process of the two servers opens its own connection to the database, with caches of its own.
        let servers = try await ServerPool(count: 2) { try await .launch(location, logger: logger) { try server($0) } }
        do {
            let result = try await location.withStore(logger: logger) { stallingStore in
                try await server(stallingStore, deadline: stallingDeadline(kind)).test(.router) { stallingClient in
                    try await body(servers, stallingClient)
                }
            }
            try await servers.stop()
            return result
        } catch {
            try? await servers.stop()
            throw error
        }
    }

    /// The two servers of a run, each restartable as a process behind a balancer is in a rolling restart: the new
    /// process starts (its own connection, empty caches), takes every request from then on, and the old one finishes
    /// the requests it holds and stops as `serve` stops (its services shut down, its last usage counts flushed).
    /// Histories play at once on the pool, so a restart one asks for meets the others' requests in flight.
    final class ServerPool: Sendable {
        /// One process of a server: its client, the requests it holds, and how to stop it.
        final class Process: Sendable {
            let client: any TestClientProtocol
            let inFlight = Mutex(0)
            private let stopper: AsyncStream<Void>.Continuation
            private let running: Task<Void, any Error>

            /// Starts a process of the server `make` builds over a store of its own at `location`.
            static func launch(
                _ location: StoreLocation, logger: Logger,
                _ make: @escaping @Sendable (any DataStore) throws -> Application<RouterResponder<ServerContext>>
            ) async throws -> Process {
                let (ready, readier) = AsyncStream<any TestClientProtocol>.makeStream()
                let (stop, stopper) = AsyncStream<Void>.makeStream()
                let running = Task {
                    defer { readier.finish() }
                    try await location.withStore(logger: logger) { store in
                        try await make(store).test(.router) { client in
                            readier.yield(client)
                            for await _ in stop { break }
                        }
                    }
                }
                for await client in ready { return Process(client: client, stopper: stopper, running: running) }
                try await running.value
                throw TestKitError("a simulated server stopped before it started")
            }

            private init(
                client: any TestClientProtocol, stopper: AsyncStream<Void>.Continuation, running: Task<Void, any Error>
            ) {
                self.client = client
                self.stopper = stopper
                self.running = running
            }

            /// Stops the process once the requests it holds are answered (the pool sends it no new ones).
            func stop() async throws {
                while inFlight.withLock({ $0 }) > 0 { try await Task.sleep(for: .milliseconds(2)) }
                stopper.yield()
                try await running.value
            }
        }

        private let processes: Mutex<[Process]>
        private let restarting = Mutex<Set<Int>>([])
        private let launch: @Sendable () async throws -> Process
        private let restartCount = Mutex(0)
        private let retiring = Mutex<[Task<Void, any Error>]>([])

        init(count: Int, launch: @escaping @Sendable () async throws -> Process) async throws {
            var processes: [Process] = []
            for _ in 0..<count { processes.append(try await launch()) }
            self.processes = Mutex(processes)
            self.launch = launch
        }

        var count: Int { processes.withLock { $0.count } }
        /// How many restarts ran.
        var restarts: Int { restartCount.withLock { $0 } }

        /// Runs `body` with server `server`'s current process, which stops only after it.
        func execute<T>(on server: Int, _ body: (any TestClientProtocol) async throws -> T) async throws -> T {
            let process = processes.withLock { processes in
                let process = processes[server]
                process.inFlight.withLock { $0 += 1 }
                return process
            }
            defer { process.inFlight.withLock { $0 -= 1 } }
            return try await body(process.client)
        }

        /// Restarts server `server` (a restart asked for while one of it starts is that one).
        func restart(_ server: Int) async throws {
            guard restarting.withLock({ $0.insert(server).inserted }) else { return }
            defer { restarting.withLock { _ = $0.remove(server) } }
            let new = try await launch()
            let old = processes.withLock { processes in
                let old = processes[server]
                processes[server] = new
                return old
            }
            restartCount.withLock { $0 += 1 }
            // The old process stops meanwhile, as the balancer does not wait for it (its shutdown waits for what its
            // services hold: a webhook attempt to a host that does not resolve can take seconds).
            let stopping = Task { try await old.stop() }
            retiring.withLock { $0.append(stopping) }
        }

        /// Stops every server, and waits for the restarted ones' old processes.
        func stop() async throws {
            for process in processes.withLock({ $0 }) { try await process.stop() }
            for stopping in retiring.withLock({ $0 }) { try await stopping.value }
        }
    }

    /// One server as `serve` builds it: production defaults (the authentication cache included), but a deadline fit
    /// for a shared machine (or `deadline`).
    private static func server(
        _ tenancy: TenancyService, deadline: Duration, googlePlay: GooglePlayConfiguration, client: GooglePlayClient,
        logger: Logger
    ) throws -> Application<RouterResponder<ServerContext>> {
        var configuration = ServerConfiguration()
        configuration.databaseTimeout = deadline
        configuration.googlePlay = googlePlay
        configuration.googleAcknowledgeFirstRetry = .seconds(1)
        return try buildApplication(
            configuration: configuration, tenancy: tenancy,
            verification: VerificationService(
                verifier: ReceiptVerifier(anchors: try TrustAnchors(encoded: [pki.rootDER])), apple: nil,
                googlePlay: client),
            logger: logger)
    }

    /// A new app selling the history's catalog on both stores (an Android package of its own, Google's purchases
    /// read with the simulator's service account, notifications pushed by the simulator's Pub/Sub subscription),
    /// delivering once or on confirmation, flagging purchases of other users.
    func newApp(confirms: Bool) async throws -> Tenant {
        let (account, key, number) = try await accounts.next(in: tenancy)
        let package = "com.example.sim\(number)"
        google.grant(googleAccount, package: package)
        var settings = AppSettings(
            bundleIDs: [History.bundleID], allowedEnvironments: ["production", "sandbox"], verificationMode: "local",
            allowsTestData: true)
        settings.packageNames = [package]
        settings.googleServiceAccountJSON = googleAccount.keyFile
        settings.googlePubSubAudience = Self.pushAudience
        settings.googlePubSubServiceAccount = Self.pushAccount
        settings.testAnchors = try TrustAnchors(encoded: [Self.pki.rootDER]).anchors.map(\.fingerprint)
        settings.productCatalog = History.catalog.map(\.catalogEntry)
        settings.deliveryMode = confirms ? "confirm" : "once"
        // Every history has an app of its own selling one bundle: each app delivers its own purchases once.
        settings.sharesBundleIDs = true
        settings.claimsPolicy = "flag"
        let token = try await tenancy.addApp(account: account, settings: settings).token
        // An endpoint takes every event, so the events of `/api` calls are kept too; the simulator reads them from
        // the outbox (invariant 3). Each server's deliverer runs, but the host does not resolve: every attempt fails
        // and is retried, as a crowd of failing endpoints would keep the delivery claims busy.
        _ = try await tenancy.addWebhookEndpoint(
            token: token, url: "https://receiver.example.com/hooks", environments: Set(StoreEnvironment.allCases),
            eventTypes: ["*"], forwardsSignedPayload: false)
        return Tenant(token: token, apiKey: key, package: package)
    }

    /// An app of the simulator's, the key of its account, and its Android package.
    struct Tenant: Sendable {
        let token: String
        let apiKey: String
        let package: String
    }

    // MARK: - Requests

    /// An answer: its HTTP status and JSON body.
    struct Answer: Sendable {
        let status: HTTPResponse.Status
        let json: JSONObject
    }

    /// Posts a form to server `server` (``stalling``: to the stalling server).
    func post(_ uri: String, form fields: [(String, String)], server: Int) async throws -> Answer {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let text = fields.map { "\($0.0)=\($0.1.addingPercentEncoding(withAllowedCharacters: allowed)!)" }
            .joined(separator: "&")
        func send(_ client: any TestClientProtocol) async throws -> Answer {
            try await client.execute(
                uri: uri, method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
                body: ByteBuffer(string: text)
            ) { response in
                guard case .object(let object) = try JSONParser.parse(response.body.readableBytesView) else {
                    throw TestKitError("\(uri) answered no JSON object: \(String(buffer: response.body))")
                }
                return Answer(status: response.status, json: object)
            }
        }
        let answer =
            if server == Self.stalling {
                try await send(stallingClient)
            } else {
                try await servers.execute(on: server) { try await send($0) }
            }
        if Verdicts.billedRoutes.contains(uri), let key = fields.first(where: { $0.0 == "apikey" })?.1,
            case .integer(let status)? = answer.json["status"]
        {
            verdicts.count(apiKey: key, status: Int(status))
        }
        return answer
    }

    /// Posts an App Store Server Notification to server `server`.
    func postNotification(token: String, signedPayload: String, server: Int) async throws -> HTTPResponse.Status {
        var body = JSONObject(capacity: 1)
        body.append("signedPayload", .string(signedPayload))
        return try await servers.execute(on: server) { client in
            try await client.execute(
                uri: "/notifications/\(token)", method: .post, headers: [.contentType: "application/json"],
                body: ByteBuffer(string: JSONValue.object(body).encodedString)
            ) { $0.status }
        }
    }

    /// Pushes Google's developer notification `notification` (its JSON) as Pub/Sub does, as message `messageID`.
    func pushGoogleNotification(token: String, messageID: String, notification: String, server: Int) async throws
        -> HTTPResponse.Status
    {
        let authorization = "Bearer " + google.pushToken(audience: Self.pushAudience, email: Self.pushAccount)
        return try await servers.execute(on: server) { client in
            try await client.execute(
                uri: "/notifications/google/\(token)", method: .post,
                headers: [.contentType: "application/json", .authorization: authorization],
                body: ByteBuffer(string: FakeGoogle.pushBody(messageID: messageID, notification: notification))
            ) { $0.status }
        }
    }

    // MARK: - Google Play's resources

    /// Google's purchases of `history` as the Play Developer API states them at the history's start, set on the fake
    /// for `package`: one-time products purchased (Google's resource keeps stating a refunded one purchased: its
    /// refunds are told by voided purchases), subscriptions in their first period (a renewal step states the next),
    /// none acknowledged yet but the subscriptions renewed in the history.
    func setGooglePurchases(of history: History, package: String) {
        for purchase in history.purchases where purchase.store == .googlePlay {
            guard let token = history.googleTokens[purchase.transactionID] else { continue }
            if purchase.expiresAt != nil {
                guard purchase.transactionID == purchase.originalTransactionID else { continue }
                setGoogleSubscription(purchase, of: history, token: token, package: package)
            } else {
                let millis = Int64((purchase.purchasedAt.timeIntervalSince1970 * 1_000).rounded(.down))
                let account = history.user(purchase.buyer)?.googleAccountID.map {
                    #","obfuscatedExternalAccountId":"\#($0)""#
                }
                google.setProduct(
                    package, purchase.productID, token: token,
                    """
                    {"kind":"androidpublisher#productPurchase","purchaseTimeMillis":"\(millis)","purchaseState":0,\
                    "consumptionState":0,"developerPayload":"","orderId":"\(purchase.transactionID)",\
                    "acknowledgementState":0,"quantity":1,"regionCode":"FR"\(account ?? "")}
                    """)
            }
        }
    }

    /// States the subscription bought with `token` as Google's `subscriptionsv2.get` does while `period` (an order of
    /// it: the first, or a renewal `…..N`) is its latest: active until the period's end (or `endingAt`, a
    /// revocation's time), expired after it; `cancelled` by the customer (renewing no more) until then.
    func setGoogleSubscription(
        _ period: Purchase, of history: History, token: String, package: String, endingAt: Date? = nil,
        cancelled: Bool = false
    ) {
        guard let expires = endingAt ?? period.expiresAt,
            let first = history.purchases.first(where: { $0.transactionID == period.originalTransactionID })
        else { return }
        let account = history.user(period.buyer)?.googleAccountID.map {
            #","externalAccountIdentifiers":{"obfuscatedExternalAccountId":"\#($0)"}"#
        }
        let state =
            expires <= Date()
            ? "SUBSCRIPTION_STATE_EXPIRED" : cancelled ? "SUBSCRIPTION_STATE_CANCELED" : "SUBSCRIPTION_STATE_ACTIVE"
        let cancellation =
            cancelled
            ? #""canceledStateContext":{"userInitiatedCancellation":{"cancelTime":"\#(Simulator.rfc3339(Date()))"}},"#
            : ""
        let acknowledgement =
            history.googleAcknowledged.contains(token)
            ? "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED" : "ACKNOWLEDGEMENT_STATE_PENDING"
        google.setSubscription(
            package, token: token,
            """
            {"kind":"androidpublisher#subscriptionPurchaseV2","regionCode":"FR",\
            "startTime":"\(Simulator.rfc3339(first.purchasedAt))",\
            "subscriptionState":"\(state)",\(cancellation)\
            "latestOrderId":"\(period.transactionID)",\
            "acknowledgementState":"\(acknowledgement)"\(account ?? ""),\
            "lineItems":[{"productId":"\(period.productID)","expiryTime":"\(Simulator.rfc3339(expires))",\
            "latestSuccessfulOrderId":"\(period.transactionID)",\
            "autoRenewingPlan":{"autoRenewEnabled":\(!cancelled)},"offerDetails":{"basePlanId":"monthly"}}]}
            """)
    }

    /// Lists `purchase`'s refund among `package`'s voided purchases, as Google lists it once it voided the order.
    func listGoogleVoid(_ purchase: Purchase, token: String, package: String) {
        guard let refunded = purchase.refundedAt else { return }
        let millis = Int64((refunded.timeIntervalSince1970 * 1_000).rounded(.down))
        let purchased = Int64((purchase.purchasedAt.timeIntervalSince1970 * 1_000).rounded(.down))
        google.addVoided(
            package,
            """
            {"kind":"androidpublisher#voidedPurchase","purchaseToken":"\(token)","orderId":"\(purchase.transactionID)",\
            "purchaseTimeMillis":"\(purchased)","voidedTimeMillis":"\(millis)","voidedSource":0,"voidedReason":1,\
            "voidedQuantity":1}
            """)
    }

    // MARK: - Signed items

    /// The StoreKit 2 transaction of `purchase` as Apple signs it at `signedAt` (with the refund, if the store held it
    /// refunded then: refunded, and not reversed yet).
    static func transaction(_ purchase: Purchase, of user: History.User?, products: [String: Product], signedAt: Date)
        throws -> String
    {
        var item = JWSBuilder()
        item.transactionID = purchase.transactionID
        item.originalTransactionID = purchase.originalTransactionID
        item.bundleID = History.bundleID
        item.productID = purchase.productID
        item.environment = "Production"
        item.signedDate = signedAt
        item.purchaseDate = purchase.purchasedAt
        item.expiresDate = purchase.expiresAt
        item.appAccountToken = user?.appAccountToken
        item.type =
            switch products[purchase.productID]?.kind {
            case .consumable: "Consumable"
            case .nonConsumable: "Non-Consumable"
            default: "Auto-Renewable Subscription"
            }
        if MoneyModel.isRefunded(purchase, at: signedAt), let refunded = purchase.refundedAt {
            item.revocation = (refunded, 1, "REFUND_FULL", nil)
        }
        return try item.build(signedBy: pki)
    }

    /// A Server Notifications V2 payload of `type` about `transaction`, signed at `signedAt`.
    static func notification(type: String, subtype: String?, uuid: String, transaction: String, signedAt: Date)
        throws -> String
    {
        var builder = JWSBuilder()
        builder.payload = .notification
        builder.bundleID = History.bundleID
        builder.environment = "Production"
        builder.notificationType = type
        builder.notificationSubtype = subtype
        builder.notificationUUID = uuid
        builder.signedDate = signedAt
        builder.signedTransactionInfo = transaction
        return try builder.build(signedBy: pki)
    }
}
