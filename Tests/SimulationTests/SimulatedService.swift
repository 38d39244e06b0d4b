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
import TestSupport

/// The real service in process, over a real store, as the simulator drives it: two servers as `serve` builds them (the
/// routes, the middleware, the ledger, the customer views, each with its own caches and its own connection to one
/// database, as two processes behind a balancer), one account, and a fresh app for every history, so that histories
/// played one after another on one database never see each other's transactions. A third server, whose database
/// deadline is a few milliseconds, plays a database that stalls: what it answers 503 the client sends again to another.
struct SimulatedService: Sendable {
    /// The PKI that signs StoreKit 2 items and notifications; the apps trust its root as test data.
    static let pki = try! TestPKI(TestPKI.Options(keyType: .p256, name: "Simulator"))

    let tenancy: TenancyService
    /// The two servers; a history says which one each step goes to.
    let clients: [any TestClientProtocol]
    /// The server whose database stalls (``stallingDeadline(_:)``), over the second server's connection.
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
    let accounts = Accounts()

    /// Shared by copies of the service: each app's account, made once, with its API key.
    actor Accounts {
        private var apps = 0
        private var keys: [Int: Task<String, any Error>] = [:]

        /// The account the next app goes to and its key: a plan holds at most 100,000 apps per account, so each
        /// account takes 50,000 histories.
        func next(in tenancy: TenancyService) async throws -> (email: String, key: String) {
            let index = apps / 50_000
            apps += 1
            let email = "sim-\(index)@example.test"
            if let made = keys[index] { return (email, try await made.value) }
            let making = Task {
                _ = try await tenancy.createAccount(name: "Sim", email: email, planName: "simulation")
                return try await tenancy.createAPIKey(account: email, label: nil).clearText
            }
            keys[index] = making
            return (email, try await making.value)
        }
    }

    /// Runs `body` with the service over a fresh store of `kind`.
    static func with<T: Sendable>(_ kind: StoreKind, _ body: @Sendable (SimulatedService) async throws -> T)
        async throws -> T
    {
        try await withTestStore(kind) { store, location in
            let logger = {
                var logger = Logger(label: "simulator")
                logger.logLevel = .critical
                return logger
            }()
            let masterKey = MasterKey.generate()
            let tenancy = TenancyService(store: store, masterKey: masterKey)
            _ = try await tenancy.setPlan(
                name: "simulation", monthlyQuota: .some(nil), rateLimitPerSecond: 1_000_000,
                includesEncryptedEndpoint: true, monthlyPriceCents: nil, overagePricePer1000Cents: nil,
                limits: [.apps: 100_000])
            // The second server: its own connection to the same database, its own caches.
            return try await location.withStore(logger: logger) { secondStore in
                let first = try server(TenancyService(store: store, masterKey: masterKey), logger: logger)
                let second = try server(TenancyService(store: secondStore, masterKey: masterKey), logger: logger)
                let stalling = try server(
                    TenancyService(store: secondStore, masterKey: masterKey), deadline: stallingDeadline(kind),
                    logger: logger)
                return try await first.test(.router) { firstClient in
                    try await second.test(.router) { secondClient in
                        try await stalling.test(.router) { stallingClient in
                            try await body(
                                SimulatedService(
                                    tenancy: tenancy, clients: [firstClient, secondClient],
                                    stallingClient: stallingClient))
                        }
                    }
                }
            }
        }
    }

    /// One server as `serve` builds it: production defaults (the authentication cache included), but a deadline fit
    /// for a shared machine (or `deadline`).
    private static func server(_ tenancy: TenancyService, deadline: Duration = .seconds(15), logger: Logger) throws
        -> Application<RouterResponder<ServerContext>>
    {
        var configuration = ServerConfiguration()
        configuration.databaseTimeout = deadline
        return try buildApplication(
            configuration: configuration, tenancy: tenancy,
            verification: VerificationService(
                verifier: ReceiptVerifier(anchors: try TrustAnchors(encoded: [pki.rootDER])), apple: nil),
            logger: logger)
    }

    /// A new app selling the history's catalog, delivering once, flagging purchases of other users.
    func newApp() async throws -> Tenant {
        var settings = AppSettings(
            bundleIDs: [History.bundleID], allowedEnvironments: ["production", "sandbox"], verificationMode: "local",
            allowsTestData: true)
        settings.testAnchors = try TrustAnchors(encoded: [Self.pki.rootDER]).anchors.map(\.fingerprint)
        settings.productCatalog = History.catalog.map(\.catalogEntry)
        settings.deliveryMode = "once"
        // Every history has an app of its own selling one bundle: each app delivers its own purchases once.
        settings.sharesBundleIDs = true
        settings.claimsPolicy = "flag"
        let (account, key) = try await accounts.next(in: tenancy)
        let token = try await tenancy.addApp(account: account, settings: settings).token
        // An endpoint takes every event, so the events of `/api` calls are kept too; the simulator reads them from
        // the outbox (invariant 3). Each server's deliverer runs, but the host does not resolve: every attempt fails
        // and is retried, as a crowd of failing endpoints would keep the delivery claims busy.
        _ = try await tenancy.addWebhookEndpoint(
            token: token, url: "https://receiver.example.com/hooks", environments: Set(StoreEnvironment.allCases),
            eventTypes: ["*"], forwardsSignedPayload: false)
        return Tenant(token: token, apiKey: key)
    }

    /// An app of the simulator's, and the key of its account.
    struct Tenant: Sendable {
        let token: String
        let apiKey: String
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
        return try await (server == Self.stalling ? stallingClient : clients[server]).execute(
            uri: uri, method: .post, headers: [.contentType: "application/x-www-form-urlencoded"],
            body: ByteBuffer(string: text)
        ) { response in
            guard case .object(let object) = try JSONParser.parse(response.body.readableBytesView) else {
                throw TestKitError("\(uri) answered no JSON object: \(String(buffer: response.body))")
            }
            return Answer(status: response.status, json: object)
        }
    }

    /// Posts an App Store Server Notification to server `server`.
    func postNotification(token: String, signedPayload: String, server: Int) async throws -> HTTPResponse.Status {
        var body = JSONObject(capacity: 1)
        body.append("signedPayload", .string(signedPayload))
        return try await clients[server].execute(
            uri: "/notifications/\(token)", method: .post, headers: [.contentType: "application/json"],
            body: ByteBuffer(string: JSONValue.object(body).encodedString)
        ) { $0.status }
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
