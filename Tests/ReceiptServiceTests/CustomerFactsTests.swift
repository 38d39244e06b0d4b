import Foundation
import ReceiptCore
import Testing

@testable import ReceiptService

/// What a server keeps of the customers it answered (``CustomerFacts``): rows and views under one marker, a view
/// until its next change and for its catalog only, and views dropped when the rows are read again.
@Suite struct CustomerFactsTests {
    static let appID = UUID()
    static let subject = CustomerLookup.Subject.user("u1")
    static let catalog = [CatalogProduct(id: "p", kind: .nonConsumable, entitlements: ["pro"])]

    static func row(_ id: String) -> LedgerEntry {
        LedgerEntry(
            appID: appID, environment: .production,
            transaction: PurchaseTransaction(transactionID: id, originalTransactionID: id, productID: "p"),
            claimant: "u1", firstSeenAt: Date(), lastSeenAt: Date(), firstRequestID: "r", deliveredAt: nil)
    }

    @Test func aViewIsKeptUntilItsNextChangeUnderItsCatalogAndMarker() {
        let facts = CustomerFacts(capacity: 100)
        facts.remember([Self.row("1")], of: Self.subject, appID: Self.appID, marker: 7)
        let json: JSONObject = ["computed_at": .string("then")]
        facts.remember(
            json, of: Self.subject, appID: Self.appID, environment: nil, catalog: Self.catalog, until: 1_000,
            marker: 7)
        let ask = { (now: Int64, catalog: [CatalogProduct]?, marker: Int?) in
            facts.view(
                of: Self.subject, appID: Self.appID, environment: nil, catalog: catalog, at: now, marker: marker)
        }
        #expect(ask(999, Self.catalog, 7) == json)
        #expect(ask(1_000, Self.catalog, 7) == nil)
        #expect(ask(999, nil, 7) == nil)
        #expect(ask(999, Self.catalog, nil) == nil)
        #expect(
            facts.view(
                of: Self.subject, appID: Self.appID, environment: .sandbox, catalog: Self.catalog, at: 1, marker: 7)
                == nil)
        // Another marker: nothing kept is answered.
        #expect(facts.entries(of: Self.subject, appID: Self.appID, marker: 8) == nil)
        #expect(ask(999, Self.catalog, 8) == nil)
    }

    @Test func rowsReadAgainDropTheViewsOfTheEarlierOnes() {
        let facts = CustomerFacts(capacity: 100)
        facts.remember([Self.row("1")], of: Self.subject, appID: Self.appID, marker: 7)
        facts.remember(
            ["a": .bool(true)], of: Self.subject, appID: Self.appID, environment: nil, catalog: nil, until: .max,
            marker: 7)
        facts.remember([Self.row("1"), Self.row("2")], of: Self.subject, appID: Self.appID, marker: 7)
        #expect(facts.entries(of: Self.subject, appID: Self.appID, marker: 7)?.count == 2)
        #expect(
            facts.view(of: Self.subject, appID: Self.appID, environment: nil, catalog: nil, at: 0, marker: 7) == nil)
    }

    @Test func theRowsKeptAreBounded() {
        let facts = CustomerFacts(capacity: 3)
        facts.remember([Self.row("1"), Self.row("2")], of: Self.subject, appID: Self.appID, marker: 1)
        facts.remember([Self.row("3"), Self.row("4")], of: .user("u2"), appID: Self.appID, marker: 1)
        #expect(facts.entries(of: Self.subject, appID: Self.appID, marker: 1) == nil)
        #expect(facts.entries(of: .user("u2"), appID: Self.appID, marker: 1)?.count == 2)
        facts.remember((0..<4).map { Self.row("x\($0)") }, of: .user("u3"), appID: Self.appID, marker: 1)
        #expect(facts.entries(of: .user("u3"), appID: Self.appID, marker: 1) == nil)
    }
}
