import Foundation
import ReceiptCore
import Testing

@testable import ReceiptService

/// The rules that turn a customer's facts into entitlements (``EntitlementRules``), one test per rule of docs/api.md,
/// "Customers and entitlements".
@Suite struct EntitlementRulesTests {
    static let appID = UUID()
    static let day: Int64 = 86_400_000
    /// 2026-01-01T00:00:00Z.
    static let t0: Int64 = 1_767_225_600_000

    static let catalog: [CatalogProduct] = [
        CatalogProduct(id: "pro.monthly", kind: .autoRenewable, entitlements: ["pro"]),
        CatalogProduct(id: "basic.monthly", kind: .autoRenewable, entitlements: ["basic"]),
        CatalogProduct(id: "premium.monthly", kind: .autoRenewable, entitlements: ["basic", "pro"]),
        CatalogProduct(id: "lifetime", kind: .nonConsumable, entitlements: ["pro", "no_ads"]),
        CatalogProduct(id: "season", kind: .nonRenewing(CatalogDuration("P30D")), entitlements: ["season"]),
        CatalogProduct(id: "coins", kind: .consumable),
        CatalogProduct(id: "listed.only"),
    ]

    static func period(
        _ id: String, original: String = "1000", product: String = "pro.monthly", purchased: Int64,
        expires: Int64? = nil, environment: StoreEnvironment = .production, revoked: Int64? = nil,
        revocationType: String? = nil, ownership: String? = nil, offerType: Int? = nil, discount: String? = nil,
        storeKitType: String? = nil, revocationAsOf: Int64? = nil
    ) -> LedgerEntry {
        LedgerEntry(
            appID: appID, environment: environment,
            transaction: PurchaseTransaction(
                transactionID: id, originalTransactionID: original, productID: product, purchaseDate: purchased,
                originalPurchaseDate: nil, expiresDate: expires, inAppOwnershipType: ownership,
                revocationDate: revoked, revocationType: revocationType, productType: storeKitType,
                offerType: offerType, offerDiscountType: discount),
            claimant: "u1", firstSeenAt: Date(timeIntervalSince1970: Double(purchased) / 1000),
            lastSeenAt: Date(timeIntervalSince1970: Double(purchased) / 1000), firstRequestID: "r",
            deliveredAt: nil, revocationAsOf: revocationAsOf ?? revoked)
    }

    static func status(
        _ state: SubscriptionStatus.State, original: String = "1000", product: String = "pro.monthly",
        expires: Int64?, grace: Int64? = nil, autoRenews: Bool? = true, renewsTo: String? = nil, asOf: Int64,
        environment: StoreEnvironment = .production
    ) -> SubscriptionStatus {
        SubscriptionStatus(
            appID: appID, environment: environment, originalTransactionID: original, productID: product,
            state: state, expiresDate: expires, gracePeriodExpiresDate: grace, autoRenews: autoRenews,
            autoRenewProductID: renewsTo ?? product, asOf: asOf, updatedAt: Date())
    }

    static func view(
        _ entries: [LedgerEntry], _ statuses: [SubscriptionStatus] = [], at now: Int64,
        environment: StoreEnvironment = .production, catalog: [CatalogProduct]? = catalog
    ) -> CustomerView {
        EntitlementRules.view(
            appUserID: "u1", environment: environment, entries: entries, statuses: statuses, catalog: catalog,
            now: now)
    }

    /// Nine monthly periods, the first at t0.
    static var nineRenewals: [LedgerEntry] {
        (0..<9).map { month in
            period(
                "\(2000 + month)", purchased: t0 + Int64(month) * 30 * day, expires: t0 + Int64(month + 1) * 30 * day)
        }
    }

    @Test func aSubscriptionIsActiveUntilItsNewestPeriodsExpiry() throws {
        let end = Self.t0 + 270 * Self.day
        let during = Self.view(Self.nineRenewals, at: end - 1)
        let pro = try #require(during.entitlement("pro"))
        #expect(pro.isActive && pro.expiresAt == end && pro.transactionID == "2008" && pro.willRenew == nil)
        #expect(during.subscriptions.count == 1 && during.subscriptions[0].periods == 9)
        #expect(during.subscriptions[0].status == .active)
        // Long after, as with a receipt whose renewals ended in 2020: nothing is active, and it says so once.
        let after = Self.view(Self.nineRenewals, at: end + 365 * Self.day)
        #expect(after.entitlement("pro")?.isActive == false && after.entitlement("pro")?.expiresAt == end)
        #expect(after.subscriptions.map(\.status) == [.expired] && after.activeEntitlements.isEmpty)
    }

    @Test func theGracePeriodKeepsItActiveUntilItsEnd() throws {
        let expiry = Self.t0 + 30 * Self.day
        let graceEnd = expiry + 16 * Self.day
        let facts = [Self.period("2000", purchased: Self.t0, expires: expiry)]
        let statuses = [Self.status(.gracePeriod, expires: expiry, grace: graceEnd, asOf: expiry + 1000)]
        let inGrace = Self.view(facts, statuses, at: expiry + 2 * Self.day)
        let pro = try #require(inGrace.entitlement("pro"))
        #expect(pro.isActive && pro.gracePeriodExpiresAt == graceEnd && pro.billingIssueDetectedAt == expiry + 1000)
        #expect(inGrace.subscriptions[0].status == .gracePeriod)
        // Its end passed with no renewal: billing retry, inactive.
        let past = Self.view(facts, statuses, at: graceEnd + 1)
        #expect(past.entitlement("pro")?.isActive == false && past.subscriptions[0].status == .billingRetry)
    }

    @Test func billingRetryWithoutGraceIsInactive() throws {
        let expiry = Self.t0 + 30 * Self.day
        let facts = [Self.period("2000", purchased: Self.t0, expires: expiry)]
        let statuses = [Self.status(.billingRetry, expires: expiry, asOf: expiry + 5)]
        let view = Self.view(facts, statuses, at: expiry + Self.day)
        let pro = try #require(view.entitlement("pro"))
        #expect(!pro.isActive && pro.billingIssueDetectedAt == expiry + 5 && pro.gracePeriodExpiresAt == nil)
        #expect(view.subscriptions[0].status == .billingRetry)
    }

    @Test(arguments: ["REFUND_FULL", "REFUND_PRORATED"])
    func aRefundEndsItAtOnce(type: String) throws {
        let refund = Self.t0 + 3 * Self.day
        let facts = [
            Self.period(
                "2000", purchased: Self.t0, expires: Self.t0 + 30 * Self.day, revoked: refund, revocationType: type)
        ]
        let view = Self.view(facts, at: Self.t0 + 4 * Self.day)
        let pro = try #require(view.entitlement("pro"))
        #expect(!pro.isActive && pro.refundedAt == refund && view.subscriptions[0].status == .revoked)
    }

    @Test func aRevocationToldByANewerStatusEndsItAndAReversalRestoresIt() throws {
        let expiry = Self.t0 + 30 * Self.day
        let facts = [Self.period("2000", purchased: Self.t0, expires: expiry)]
        let revoked = Self.view(
            facts, [Self.status(.revoked, expires: expiry, asOf: Self.t0 + 2 * Self.day)], at: Self.t0 + 3 * Self.day)
        #expect(revoked.entitlement("pro")?.isActive == false)
        #expect(revoked.entitlement("pro")?.refundedAt == Self.t0 + 2 * Self.day)
        // The ledger recorded the refund; a newer statement that the subscription stands (REFUND_REVERSED) restores it.
        let refunded = [
            Self.period("2000", purchased: Self.t0, expires: expiry, revoked: Self.t0 + Self.day)
        ]
        let reversed = Self.view(
            refunded, [Self.status(.active, expires: expiry, asOf: Self.t0 + 2 * Self.day)], at: Self.t0 + 3 * Self.day)
        #expect(reversed.entitlement("pro")?.isActive == true && reversed.entitlement("pro")?.refundedAt == nil)
        // An older statement does not.
        let stale = Self.view(
            refunded, [Self.status(.active, expires: expiry, asOf: Self.t0 + 1)], at: Self.t0 + 3 * Self.day)
        #expect(stale.entitlement("pro")?.isActive == false)
    }

    @Test func anUpgradeSwitchesAtOnce() throws {
        // Basic bought at t0; premium bought ten days later in the same group (one original transaction).
        let facts = [
            Self.period("2000", product: "basic.monthly", purchased: Self.t0, expires: Self.t0 + 30 * Self.day),
            Self.period(
                "2001", product: "premium.monthly", purchased: Self.t0 + 10 * Self.day,
                expires: Self.t0 + 40 * Self.day),
        ]
        let view = Self.view(facts, at: Self.t0 + 11 * Self.day)
        #expect(view.subscriptions.map(\.productID) == ["premium.monthly"])
        let pro = try #require(view.entitlement("pro"))
        #expect(pro.isActive && pro.productID == "premium.monthly" && pro.expiresAt == Self.t0 + 40 * Self.day)
        #expect(view.entitlement("basic")?.productID == "premium.monthly")
    }

    @Test func aDowngradeWaitsForTheRenewal() throws {
        let expiry = Self.t0 + 30 * Self.day
        var facts = [Self.period("2000", product: "premium.monthly", purchased: Self.t0, expires: expiry)]
        let downgrade = Self.status(
            .active, product: "premium.monthly", expires: expiry, renewsTo: "basic.monthly", asOf: Self.t0 + Self.day)
        let before = Self.view(facts, [downgrade], at: Self.t0 + 2 * Self.day)
        #expect(before.entitlement("pro")?.isActive == true)
        #expect(before.subscriptions[0].autoRenewProductID == "basic.monthly")
        // The renewal brings the basic period: pro ends with the premium period.
        facts.append(Self.period("2001", product: "basic.monthly", purchased: expiry, expires: expiry + 30 * Self.day))
        let after = Self.view(facts, [downgrade], at: expiry + Self.day)
        #expect(
            after.entitlement("basic")?.isActive == true && after.entitlement("basic")?.productID == "basic.monthly")
        #expect(after.entitlement("pro") == nil && after.subscriptions[0].productID == "basic.monthly")
    }

    @Test func aStatusOlderThanTheLatestPeriodGivesWay() throws {
        let expiry = Self.t0 + 30 * Self.day
        let facts = [
            Self.period("2000", purchased: Self.t0, expires: expiry),
            Self.period("2001", purchased: expiry, expires: expiry + 30 * Self.day),
        ]
        // The status said expired before the renewal's period was presented.
        let view = Self.view(facts, [Self.status(.expired, expires: expiry, asOf: expiry + 1)], at: expiry + Self.day)
        #expect(view.entitlement("pro")?.isActive == true && view.entitlement("pro")?.willRenew == nil)
        #expect(view.entitlement("pro")?.expiresAt == expiry + 30 * Self.day)
    }

    @Test func theRenewalTurnedOffIsReported() throws {
        let expiry = Self.t0 + 30 * Self.day
        let facts = [Self.period("2000", purchased: Self.t0, expires: expiry)]
        var off = Self.status(.active, expires: expiry, autoRenews: false, asOf: Self.t0 + 2 * Self.day)
        off.unsubscribeDetectedAt = Self.t0 + Self.day
        let pro = try #require(Self.view(facts, [off], at: Self.t0 + 3 * Self.day).entitlement("pro"))
        #expect(pro.isActive && pro.willRenew == false && pro.unsubscribeDetectedAt == Self.t0 + Self.day)
    }

    @Test func familySharedPurchasesGrantToTheirPresenter() throws {
        let facts = [
            Self.period("3000", original: "3000", product: "lifetime", purchased: Self.t0, ownership: "FAMILY_SHARED")
        ]
        let view = Self.view(facts, at: Self.t0 + Self.day)
        let noAds = try #require(view.entitlement("no_ads"))
        #expect(noAds.isActive && noAds.ownershipType == "FAMILY_SHARED" && noAds.expiresAt == nil)
        // A family revoke (the purchaser left the family, or refunded) ends it.
        let revoked = [
            Self.period(
                "3000", original: "3000", product: "lifetime", purchased: Self.t0, revoked: Self.t0 + Self.day,
                revocationType: "FAMILY_REVOKE", ownership: "FAMILY_SHARED")
        ]
        #expect(Self.view(revoked, at: Self.t0 + 2 * Self.day).entitlement("no_ads")?.isActive == false)
    }

    @Test func aNonRenewingSubscriptionLastsItsCatalogDuration() throws {
        let facts = [Self.period("4000", original: "4000", product: "season", purchased: Self.t0)]
        let during = Self.view(facts, at: Self.t0 + 29 * Self.day)
        let season = try #require(during.entitlement("season"))
        #expect(season.isActive && season.expiresAt == Self.t0 + 30 * Self.day && season.willRenew == false)
        #expect(during.subscriptions.map(\.kind) == [.nonRenewing(CatalogDuration("P30D"))])
        #expect(Self.view(facts, at: Self.t0 + 30 * Self.day).entitlement("season")?.isActive == false)
    }

    @Test func aLifetimePurchaseOutranksASubscription() throws {
        let facts = [
            Self.period("2000", purchased: Self.t0, expires: Self.t0 + 30 * Self.day),
            Self.period("3000", original: "3000", product: "lifetime", purchased: Self.t0 + Self.day),
        ]
        let pro = try #require(Self.view(facts, at: Self.t0 + 2 * Self.day).entitlement("pro"))
        #expect(pro.isActive && pro.expiresAt == nil && pro.productID == "lifetime")
        // Refunded, it gives way to the subscription while that runs.
        let refunded = [
            facts[0],
            Self.period(
                "3000", original: "3000", product: "lifetime", purchased: Self.t0 + Self.day,
                revoked: Self.t0 + 2 * Self.day),
        ]
        let after = try #require(Self.view(refunded, at: Self.t0 + 3 * Self.day).entitlement("pro"))
        #expect(after.isActive && after.productID == "pro.monthly")
    }

    @Test func sandboxAndProductionNeverMix() throws {
        let facts = [
            Self.period("2000", purchased: Self.t0, expires: Self.t0 + 30 * Self.day, environment: .sandbox),
            Self.period("3000", original: "3000", product: "lifetime", purchased: Self.t0),
        ]
        let production = Self.view(facts, at: Self.t0 + Self.day)
        #expect(production.subscriptions.isEmpty && production.entitlement("pro")?.productID == "lifetime")
        let sandbox = Self.view(facts, at: Self.t0 + Self.day, environment: .sandbox)
        #expect(sandbox.purchases.isEmpty && sandbox.entitlement("pro")?.productID == "pro.monthly")
        #expect(sandbox.entitlement("no_ads") == nil && sandbox.environment == .sandbox)
    }

    @Test func consumablesAndUnknownProductsGrantNothing() throws {
        let facts = [
            Self.period("5000", original: "5000", product: "coins", purchased: Self.t0),
            Self.period("5001", original: "5001", product: "listed.only", purchased: Self.t0),
            Self.period("5002", original: "5002", product: "not.in.catalog", purchased: Self.t0),
        ]
        let view = Self.view(facts, at: Self.t0 + Self.day)
        #expect(view.entitlements.isEmpty && view.unknownProducts == ["not.in.catalog"])
        #expect(view.purchases.map(\.kind) == [.consumable, nil, nil])
        #expect(view.purchases.map(\.isActive) == [nil, nil, nil])
        // Without a catalog, every product is unknown.
        #expect(Self.view(facts, at: Self.t0, catalog: nil).unknownProducts.count == 3)
    }

    @Test func aStoreKitTypeIsTakenWhereTheCatalogSaysNone() throws {
        // `listed.only` has no terms; StoreKit 2 says it is a subscription.
        let facts = [
            Self.period(
                "6000", original: "6000", product: "listed.only", purchased: Self.t0, expires: Self.t0 + Self.day,
                storeKitType: "Auto-Renewable Subscription")
        ]
        let view = Self.view(facts, at: Self.t0 + 1)
        #expect(view.subscriptions.map(\.productID) == ["listed.only"] && view.subscriptions[0].isActive)
        #expect(view.subscriptions[0].entitlements.isEmpty && view.entitlements.isEmpty)
    }

    @Test(
        arguments: [
            (nil, nil, PeriodType.normal), (1, "FREE_TRIAL", .trial), (1, "PAY_AS_YOU_GO", .intro), (1, nil, .intro),
            (2, nil, .offer), (3, nil, .offer), (4, "PAY_UP_FRONT", .offer),
        ] as [(Int?, String?, PeriodType)])
    func thePeriodTypeIsTheLatestPeriodsOffer(offer: Int?, discount: String?, expected: PeriodType) throws {
        let facts = [
            Self.period(
                "2000", purchased: Self.t0, expires: Self.t0 + 7 * Self.day, offerType: offer, discount: discount)
        ]
        #expect(Self.view(facts, at: Self.t0 + 1).entitlement("pro")?.periodType == expected)
    }

    @Test(arguments: [
        ("a.b=auto_renewable:pro", "a.b=auto_renewable:pro"), ("a.b", "a.b"),
        ("a.b=non_renewing/p30d:season,x", "a.b=non_renewing/P30D:season,x"), ("a=consumable", "a=consumable"),
        ("a=non_consumable:pro,no_ads", "a=non_consumable:pro,no_ads"),
        ("a=non_renewing/P1Y2M", "a=non_renewing/P1Y2M"),
    ])
    func catalogEntriesReadAsWritten(text: String, written: String) throws {
        #expect(try CatalogProduct(parsing: text).description == written)
    }

    @Test(arguments: [
        "a=", "a=subscription", "a=non_renewing", "a=non_renewing/30D", "a=non_renewing/P", "a=non_renewing/PT",
        "a=consumable:coins", "a=auto_renewable:Pro", "a=auto_renewable:pro,pro", "a=auto_renewable:", "a b=consumable",
        "=consumable", "a=non_renewing/P1D1Y",
    ])
    func malformedCatalogEntriesAreRefused(text: String) {
        #expect(throws: CatalogError.self) { try CatalogProduct(parsing: text) }
    }

    @Test func durationsAddCalendarUnits() throws {
        let month = try #require(CatalogDuration("P1M"))
        // 2026-01-31 + 1 month is 2026-02-28.
        #expect(month.end(from: Self.t0 + 30 * Self.day) == Self.t0 + 58 * Self.day)
        #expect(try #require(CatalogDuration("P2W")).end(from: Self.t0) == Self.t0 + 14 * Self.day)
        #expect(try #require(CatalogDuration("PT12H")).end(from: Self.t0) == Self.t0 + Self.day / 2)
    }

    @Test func theViewSaysWhenItNextChanges() throws {
        let expiry = Self.t0 + 30 * Self.day
        let graceEnd = expiry + 16 * Self.day
        let facts = [Self.period("2000", purchased: Self.t0, expires: expiry)]
        #expect(Self.view(facts, at: Self.t0).nextChangeAt == expiry)
        let grace = [Self.status(.gracePeriod, expires: expiry, grace: graceEnd, asOf: expiry + 1)]
        #expect(Self.view(facts, grace, at: expiry + 1).nextChangeAt == graceEnd)
        #expect(Self.view(facts, at: expiry).nextChangeAt == nil)
        let lifetime = [Self.period("3000", original: "3000", product: "lifetime", purchased: Self.t0)]
        #expect(Self.view(lifetime, at: Self.t0).nextChangeAt == nil)
    }

    @Test func aMonthOfACommitmentIsNotTheCommitmentsEnd() throws {
        // Month 2 of a 12-month commitment billed monthly, renewal turned off: the month ends, the commitment does
        // not, and the customer is billed for month 3 whatever the renewal info says of renewing the commitment.
        let monthEnd = Self.t0 + 31 * Self.day
        let commitmentEnd = Self.t0 + 334 * Self.day
        var month = Self.period("2002", purchased: Self.t0, expires: monthEnd)
        month.transaction.billingPlanType = "MONTHLY"
        month.transaction.commitment = Commitment(
            billingPeriodNumber: 2, totalBillingPeriods: 12, expiresDate: commitmentEnd, price: 119_880)
        let renewalOff = [Self.status(.active, expires: monthEnd, autoRenews: false, asOf: Self.t0 + Self.day)]
        let view = Self.view([month], renewalOff, at: Self.t0 + 2 * Self.day)
        let pro = try #require(view.entitlements.first { $0.name == "pro" })
        #expect(pro.isActive && pro.expiresAt == monthEnd && pro.commitmentExpiresAt == commitmentEnd)
        #expect(pro.willRenew == true && pro.billingPlanType == "MONTHLY")
        #expect(pro.json["commitment_expires_at"] == .string(AppleDate.rfc3339(milliseconds: commitmentEnd)))
        #expect(view.subscriptions.first?.commitmentExpiresAt == commitmentEnd)
        // The commitment's last month: renewing is the renewal info's to say again.
        var last = Self.period("2012", purchased: commitmentEnd - 30 * Self.day, expires: commitmentEnd)
        last.transaction.billingPlanType = "MONTHLY"
        last.transaction.commitment = month.transaction.commitment
        last.transaction.commitment?.billingPeriodNumber = 12
        let lastRenewalOff = [
            Self.status(.active, expires: commitmentEnd, autoRenews: false, asOf: commitmentEnd - 29 * Self.day)
        ]
        let lastView = Self.view([month, last], lastRenewalOff, at: commitmentEnd - 10 * Self.day)
        #expect(lastView.entitlements.first { $0.name == "pro" }?.willRenew == false)
        // A plan without a commitment says nothing of one, and its entitlement's JSON is as before.
        let plain = Self.view([Self.period("3000", purchased: Self.t0, expires: monthEnd)], at: Self.t0)
        let json = try #require(plain.entitlements.first?.json)
        #expect(json["commitment_expires_at"] == nil && json["billing_plan_type"] == nil)
    }
}
