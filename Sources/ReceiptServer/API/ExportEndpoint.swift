import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import ReceiptCore
import ReceiptService

/// `GET /api/export`: the app's transactions, customers, events or usage as JSON Lines or CSV, streamed a page at a
/// time in constant memory, whatever the size (docs/api.md, "Exports"). The key comes in `Authorization` only (a key
/// in a URL is written to logs); the app, kind, format, range, cursor and limit in the query. Everything a caller can
/// get wrong is answered before the first byte; once rows flow, a failure cuts the transfer (the chunked body never
/// ends), and the last whole line's `cursor` resumes it. Admitted by the plan's rate limit and quota and counted once
/// per export, as `export`.
struct ExportEndpoint: Sendable {
    let authenticator: Authenticator
    let failedAuthentications: FailedAuthentications
    let gate: UsageGate
    let exporter: Exporter
    /// Exports each account may have streaming at once.
    let slots: ExportSlots
    let logger: Logger

    func respond(to request: Request, context: ServerContext) async -> Response {
        let requestID = context.requestID
        do {
            let query: [String: String]
            do {
                query = try ExportResponse.parameters(of: request)
            } catch let error as ServiceError {
                throw HTTPFailure.badRequest(saying: error.reason)
            }
            guard query["apikey"] == nil else {
                throw HTTPFailure.badRequest(
                    saying: "the API key goes in Authorization (Bearer), never in the URL, which logs keep")
            }
            let token = query["token"]
            context.record.token = token
            let apiKey = try VerificationEndpoint.bearerOrField(request, nil)
            let caller = try await failedAuthentications.guarding(context.clientAddress) { mayQueryStore in
                try await authenticator.authenticate(
                    apiKey: apiKey, token: token, mayQueryStore: mayQueryStore, logger: logger)
            }
            context.record.caller = caller
            let export: ExportRequest
            do {
                export = try ExportRequest(parameters: query, appID: caller.app.id)
            } catch let error as ServiceError where error.code == .invalidArgument {
                throw HTTPFailure.badRequest(saying: error.reason)
            }
            // Within the account's share of exports running at once (before the plan counts it).
            guard let slot = slots.take(for: caller.app.accountID) else {
                throw HTTPFailure(
                    status: ResponseStatus.tooManyRequests,
                    reason: "\(slots.perAccount) exports of the account are streaming", retryAfter: 5,
                    description: "Too many exports at once: \(slots.perAccount) of this account are running; retry "
                        + "when one ends")
            }
            let ticket: UsageGate.Ticket
            switch try await gate.admit(caller, to: .export) {
            case .admitted(let admitted): ticket = admitted
            case .refused(let refusal): throw refusal
            }
            // Counted once, when the rows start to flow.
            gate.settle(ticket, status: 0)
            context.record.outcome = RequestRecord.Outcome(status: 0, source: .none, input: nil, detail: "export")
            var headers = HTTPFields()
            headers[RequestID.header] = requestID
            return ExportResponse.streaming(
                export, app: caller.app, exporter: exporter, slot: slot, fileName: export.kind.rawValue,
                headers: headers, logger: logger, metadata: ["request_id": "\(requestID)"])
        } catch {
            var outcome = VerificationEndpoint.outcome(for: error)
            outcome.requestID = requestID
            context.record.outcome = RequestRecord.Outcome(
                status: outcome.status, source: outcome.source, input: outcome.input?.rawValue, detail: outcome.detail)
            return VerificationEndpoint.response(outcome, sealed: nil, requestID: requestID, allowed: "GET")
        }
    }
}
