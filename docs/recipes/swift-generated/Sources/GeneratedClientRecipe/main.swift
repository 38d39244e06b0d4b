// A backend's ReceiptVerify client generated from the OpenAPI document by Apple's swift-openapi-generator: this
// package's build plugin reads openapi.json beside this file (a link to the document the server serves) and
// openapi-generator-config.yaml (types and client; the default naming), and writes `Client` with one method per
// route and a type per answer. Nothing here is written by hand but the calls and a date reader. swift-openapi-urlsession is the
// transport; swift-crypto opens the sealed /apiencrypted answer.
//
// It verifies a receipt on /api for a user, opens an /apiencrypted answer with the app's result key, looks the
// user up on /api/customers, and confirms the delivery on /api/transactions/delivered (an app with
// `--delivery confirm`), then checks that the next answer no longer says to deliver. The generated types decode
// strictly (the document's answers are closed: a field the server sends that the document lacks fails to
// decode), so the recipe fails when the document and the server drift apart.
//
// Inputs, from the environment: RV_URL, RV_KEY, RV_TOKEN_CONFIRM (an app with `--delivery confirm` and
// `--cipher aes-256-cbc`), RV_RESULT_KEY_CONFIRM (base64 of its result key), RV_RECEIPT (a file with a
// receipt's base64). scripts/recipes.sh builds and runs it (`swift run` in this folder).
import Crypto
import Foundation
import HTTPTypes
import OpenAPIRuntime
import OpenAPIURLSession
import _CryptoExtras

/// Sends the account's API key as `Authorization: Bearer` on every call.
struct BearerKey: ClientMiddleware {
    let key: String

    func intercept(
        _ request: HTTPRequest, body: HTTPBody?, baseURL: URL, operationID: String,
        next: (HTTPRequest, HTTPBody?, URL) async throws -> (HTTPResponse, HTTPBody?)
    ) async throws -> (HTTPResponse, HTTPBody?) {
        var request = request
        request.headerFields[.authorization] = "Bearer \(key)"
        return try await next(request, body, baseURL)
    }
}

/// The document's dates: RFC 3339, ours with milliseconds (`2026-11-23T03:03:15.780Z`), some without
/// (`quota_resets_at`). The runtime's `.iso8601` reads only the second kind, `.iso8601WithFractionalSeconds` only the
/// first: this one reads both and writes ours.
struct RFC3339Dates: DateTranscoder {
    func encode(_ date: Date) throws -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true))
    }

    func decode(_ text: String) throws -> Date {
        if let date = try? Date(text, strategy: .iso8601.year().month().day().time(includingFractionalSeconds: true)) {
            return date
        }
        return try Date(text, strategy: .iso8601)
    }
}

let env = ProcessInfo.processInfo.environment
var failures = 0

@MainActor func check(_ label: String, _ ok: Bool, _ detail: String = "") {
    print("\(ok ? "ok  " : "FAIL") \(label)\(detail.isEmpty ? "" : ": \(detail)")")
    if !ok { failures += 1 }
}

/// An `/apiencrypted` answer of an aes-256-cbc app: base64 of `IV[16] ‖ AES-256-CBC(json, PKCS#7)`.
func openSealed(_ text: String, key: SymmetricKey) throws -> Data {
    guard let data = Data(base64Encoded: text), data.count > 32 else { throw CocoaError(.coderInvalidValue) }
    return try AES._CBC.decrypt(data.dropFirst(16), using: key, iv: AES._CBC.IV(ivBytes: data.prefix(16)))
}

guard let url = URL(string: env["RV_URL", default: ""]),
    let receipt = try? String(contentsOfFile: env["RV_RECEIPT", default: ""], encoding: .utf8)
        .trimmingCharacters(in: .whitespacesAndNewlines)
else {
    print("FAIL reading RV_URL and RV_RECEIPT")
    exit(1)
}
let client = Client(
    serverURL: url, configuration: Configuration(dateTranscoder: RFC3339Dates()), transport: URLSessionTransport(),
    middlewares: [BearerKey(key: env["RV_KEY", default: ""])])
let token = env["RV_TOKEN_CONFIRM", default: ""]
let user = "generated-\(UUID().uuidString)"
let nonce = UUID().uuidString
let request = Components.Schemas.VerifyRequestForm(
    token: token, receipt: receipt, nonce: nonce, app_user_id: user)

do {
    // 1. /api: the receipt for a user; every transaction is new and to be delivered (the app confirms deliveries).
    var toDeliver: [String] = []
    switch try await client.verify(body: .urlEncodedForm(request)) {
    case .ok(let ok):
        let answer = try ok.body.json
        toDeliver = (answer.transactions ?? []).filter(\.deliver).map(\.transaction_id)
        check(
            "/api: valid, for this request", answer.status == 0 && answer.nonce == nonce,
            "status \(answer.status), \(answer.transactions?.count ?? 0) transactions, \(toDeliver.count) to deliver")
        check("/api: something to deliver", !toDeliver.isEmpty)
    case let other:
        check("/api", false, "\(other)")
    }

    // 2. /apiencrypted: the answer sealed with the app's result key; its plaintext decodes as a VerifyAnswer too.
    switch try await client.verifyEncrypted(body: .urlEncodedForm(request)) {
    case .ok(let ok):
        switch ok.body {
        case .plainText(let body):
            let text = try await String(collecting: body, upTo: 1 << 22)
            let key = SymmetricKey(data: Data(base64Encoded: env["RV_RESULT_KEY_CONFIRM", default: ""]) ?? Data())
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .custom { decoder in
                try RFC3339Dates().decode(try decoder.singleValueContainer().decode(String.self))
            }
            let sealed = try decoder.decode(Components.Schemas.VerifyAnswer.self, from: try openSealed(text, key: key))
            check("/apiencrypted: opened, valid, our nonce inside", sealed.status == 0 && sealed.nonce == nonce)
        case .json(let verdict):
            check("/apiencrypted: a sealed answer", false, "a verdict in clear: \(verdict.status)")
        }
    case let other:
        check("/apiencrypted", false, "\(other)")
    }

    // 3. /api/customers: what the user may use now.
    switch try await client.lookUpCustomer(
        body: .urlEncodedForm(.init(token: token, app_user_id: user)))
    {
    case .ok(let ok):
        let customer = try ok.body.json.customer
        check(
            "/api/customers: the user's view", customer.app_user_id == user,
            "\(customer.entitlements.count) entitlements, \(customer.purchases.count) purchases, "
                + "\(customer.subscriptions.count) subscriptions")
    case let other:
        check("/api/customers", false, "\(other)")
    }

    // 4. /api/transactions/delivered: the backend delivered them; the next answer says so.
    if !toDeliver.isEmpty {
        switch try await client.confirmDeliveries(
            body: .urlEncodedForm(.init(token: token, transaction_ids: toDeliver.joined(separator: ","))))
        {
        case .ok(let ok):
            let confirmed = try ok.body.json
            check(
                "/api/transactions/delivered: every one confirmed",
                confirmed.transactions.map(\.transaction_id).sorted() == toDeliver.sorted()
                    && confirmed.unknown_transaction_ids.isEmpty, "\(confirmed.transactions.count) confirmed")
        case let other:
            check("/api/transactions/delivered", false, "\(other)")
        }
        switch try await client.verify(
            body: .urlEncodedForm(.init(token: token, receipt: receipt, app_user_id: user)))
        {
        case .ok(let ok):
            let again = try ok.body.json.transactions ?? []
            check(
                "/api: nothing to deliver again, each delivered_at set",
                again.filter { toDeliver.contains($0.transaction_id) }.allSatisfy {
                    !$0.deliver && $0.delivered_at != nil
                })
        case let other:
            check("/api (after the confirmation)", false, "\(other)")
        }
    }
} catch {
    // A decoding error here is the document and the server disagreeing.
    if let error = error as? ClientError {
        check(
            "the generated client", false, "\(error.operationID): \(error.causeDescription): \(error.underlyingError)")
    } else {
        check("the generated client", false, "\(error)")
    }
}
exit(failures == 0 ? 0 : 1)
