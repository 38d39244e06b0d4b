import Foundation
import ReceiptService
import ReceiptStore
import TestSupport
import Testing

/// Sessions, sign-in links and the audit log in both stores.
@Suite struct SessionStoreContractTests {
    static let start = Date(timeIntervalSince1970: 1_790_000_000)

    static func session(_ account: UUID, token: UInt8, at offset: TimeInterval = 0) -> AccountSession {
        AccountSession(
            id: UUID(), accountID: account, tokenHash: Array(repeating: token, count: 32), method: "oidc",
            address: "192.0.2.7", createdAt: start.addingTimeInterval(offset),
            lastUsedAt: start.addingTimeInterval(offset), expiresAt: start.addingTimeInterval(offset + 86_400))
    }

    @Test(arguments: StoreKind.available)
    func sessionsAreFoundByTheirTokensHashAndEndPerSessionOrPerAccount(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            let account = TenancyStoreContractTests.account()
            let other = TenancyStoreContractTests.account(email: "other@example.com")
            try await store.insertAccount(account)
            try await store.insertAccount(other)
            let first = Self.session(account.id, token: 1)
            let second = Self.session(account.id, token: 2, at: 5)
            let theirs = Self.session(other.id, token: 3)
            for session in [first, second, theirs] { try await store.insertSession(session) }

            #expect(try await store.session(tokenHash: first.tokenHash) == first)
            #expect(try await store.session(tokenHash: Array(repeating: 9, count: 32)) == nil)
            try await store.touchSession(id: first.id, at: Self.start.addingTimeInterval(60))
            #expect(
                try await store.session(tokenHash: first.tokenHash)?.lastUsedAt == Self.start.addingTimeInterval(60))

            #expect(try await store.deleteSession(id: first.id))
            #expect(!(try await store.deleteSession(id: first.id)))
            #expect(try await store.session(tokenHash: first.tokenHash) == nil)
            // Every session of one account ends; another account's stays.
            _ = try await store.insertSession(Self.session(account.id, token: 4))
            #expect(try await store.deleteSessions(accountID: account.id) == 2)
            #expect(try await store.session(tokenHash: second.tokenHash) == nil)
            #expect(try await store.session(tokenHash: theirs.tokenHash) == theirs)
        }
    }

    @Test(arguments: StoreKind.available)
    func aSignInLinkWorksOnceBeforeItExpires(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            let account = TenancyStoreContractTests.account()
            try await store.insertAccount(account)
            let hash = Array(repeating: UInt8(7), count: 32)
            try await store.insertSignInLink(
                SignInLink(
                    tokenHash: hash, accountID: account.id, createdAt: Self.start,
                    expiresAt: Self.start.addingTimeInterval(900)))
            // Concurrent uses: exactly one gets the account.
            let uses = try await withThrowingTaskGroup(of: UUID?.self) { group in
                for _ in 0..<8 {
                    group.addTask {
                        try await store.useSignInLink(tokenHash: hash, at: Self.start.addingTimeInterval(1))
                    }
                }
                return try await group.reduce(into: [UUID?]()) { $0.append($1) }
            }
            #expect(uses.compactMap { $0 } == [account.id])

            let late = Array(repeating: UInt8(8), count: 32)
            try await store.insertSignInLink(
                SignInLink(
                    tokenHash: late, accountID: account.id, createdAt: Self.start,
                    expiresAt: Self.start.addingTimeInterval(900)))
            #expect(try await store.useSignInLink(tokenHash: late, at: Self.start.addingTimeInterval(900)) == nil)
            #expect(try await store.useSignInLink(tokenHash: Array(repeating: 1, count: 32), at: Self.start) == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func theAuditLogListsNewestFirstPerAccountOrAll(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            let (account, other) = (UUID(), UUID())
            for index in 0..<5 {
                try await store.appendAudit(
                    AuditEntry(
                        id: UUID(), accountID: index == 4 ? other : account, actor: "dev@example.com",
                        action: "key.create", detail: "key \(index)", address: index % 2 == 0 ? "192.0.2.1" : nil,
                        at: Self.start.addingTimeInterval(Double(index))))
            }
            let mine = try await store.auditEntries(accountID: account, limit: 10)
            #expect(mine.map(\.detail) == ["key 3", "key 2", "key 1", "key 0"])
            #expect(mine.last?.address == "192.0.2.1" && mine.first?.address == nil)
            #expect(try await store.auditEntries(accountID: nil, limit: 2).map(\.detail) == ["key 4", "key 3"])
        }
    }

    @Test(arguments: StoreKind.available)
    func aSignUpCreatesTheAccountAndItsIdentityOrNeither(kind: StoreKind) async throws {
        try await withTestStore(kind) { store, _ in
            var account = TenancyStoreContractTests.account(email: "new@example.com")
            account.signedUpWith = .oidc
            let identity = AccountIdentity(
                issuer: "https://issuer.example", subject: "s-1", accountID: account.id, email: account.email,
                createdAt: Self.start)
            try await store.signUp(account, identity: identity)
            #expect(try await store.account(id: account.id)?.signedUpWith == .oidc)
            #expect(try await store.accountID(issuer: "https://issuer.example", subject: "s-1") == account.id)
            #expect(try await store.accountID(issuer: "https://other.example", subject: "s-1") == nil)

            // A taken email: neither the account nor its identity is written.
            let twin = TenancyStoreContractTests.account(email: "new@example.com")
            let twinIdentity = AccountIdentity(
                issuer: "https://issuer.example", subject: "s-2", accountID: twin.id, email: twin.email,
                createdAt: Self.start)
            await #expect(throws: ServiceError(.duplicateEmail)) {
                try await store.signUp(twin, identity: twinIdentity)
            }
            #expect(try await store.accountID(issuer: "https://issuer.example", subject: "s-2") == nil)

            // An operator's account gains an identity later.
            let existing = TenancyStoreContractTests.account(email: "cli@example.com")
            try await store.insertAccount(existing)
            #expect(try await store.account(id: existing.id)?.signedUpWith == .operator)
            let first = AccountIdentity(
                issuer: "https://issuer.example", subject: "s-3", accountID: existing.id, email: existing.email,
                createdAt: Self.start)
            #expect(try await store.linkFirstIdentity(first))
            #expect(try await store.accountID(issuer: "https://issuer.example", subject: "s-3") == existing.id)
            // The same identity again (a concurrent sign-in): still linked.
            #expect(try await store.linkFirstIdentity(first))
            // D13: another identity with the same email does not take the account over, even at once.
            let others = (4..<8).map { index in
                AccountIdentity(
                    issuer: "https://recycled.example", subject: "s-\(index)", accountID: existing.id,
                    email: existing.email, createdAt: Self.start)
            }
            let linked = try await withThrowingTaskGroup(of: Bool.self) { group in
                for other in others { group.addTask { try await store.linkFirstIdentity(other) } }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(linked.allSatisfy { !$0 })
            for other in others {
                #expect(try await store.accountID(issuer: other.issuer, subject: other.subject) == nil)
            }
            // An account without an identity gets one at a time: of several at once, one is linked.
            let fresh = TenancyStoreContractTests.account(email: "fresh@example.com")
            try await store.insertAccount(fresh)
            let racing = (0..<4).map { index in
                AccountIdentity(
                    issuer: "https://issuer.example", subject: "f-\(index)", accountID: fresh.id, email: fresh.email,
                    createdAt: Self.start)
            }
            let raced = try await withThrowingTaskGroup(of: Bool.self) { group in
                for identity in racing { group.addTask { try await store.linkFirstIdentity(identity) } }
                return try await group.reduce(into: [Bool]()) { $0.append($1) }
            }
            #expect(raced.filter { $0 }.count == 1)
        }
    }
}
